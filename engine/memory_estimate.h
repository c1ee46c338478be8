// What a native network needs in memory at the least, from its description alone (nothing
// allocated): its parameters and their gradients, and per sample the activations of every layer,
// kept for backward with their gradients in training, and kept for the batch in evaluation. A
// network that passes every size check (1e9 parameters, 20000 channels of 28x28) could need tens
// of GB, and the kernel killed the worker with nothing said.
#pragma once

#include <cstdint>
#include <string>

#include "core/model.h"
#include "engine/network.h"

namespace psrt::engine {

// A network as memory sees it: its description and the floats of one input sample.
struct NetMemory {
  const ModelDesc& desc;
  uint64_t input_floats;
  // Floats per sample held by every layer's output, and the input's.
  uint64_t activation_floats() const;
};
// `desc` described from `spec` (describe_network), with its input.
NetMemory net_memory(const ModelDesc& desc, const NetSpec& spec);

// Evaluation's batch: at most `largest`, fewer where a batch's activations would pass kEvalBytes
// (a batch of 500 samples of 60 MB activations each was 30 GB).
constexpr uint64_t kEvalBytes = uint64_t(256) << 20;
constexpr int kMostEvalBatch = 500;
int eval_batch(const NetMemory& net, int largest = kMostEvalBatch);

// The bytes the network needs at the least in training with `batch` samples and, where
// `evaluates`, in evaluation with eval_batch(net, largest_eval).
uint64_t least_memory_bytes(const NetMemory& net, int batch, bool evaluates, int largest_eval);

// Says why `copies` of the network (workers on one machine, one of them evaluating where
// `evaluates`) cannot fit `available` bytes ("" when they may, or `available` is 0); the keys to
// change named.
std::string memory_problem(const NetMemory& net, int batch, bool evaluates, int largest_eval,
                           int copies, uint64_t available);

}  // namespace psrt::engine
