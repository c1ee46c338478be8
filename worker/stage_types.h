// The data types of a worker's part in a model-parallel job: its role, and what it receives from
// a neighbouring stage (PsClient sends and receives them; the stage trainer uses them).
#pragma once

#include <zmq.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/stage_layout.h"

namespace psrt {

// A worker's part in a model-parallel job (placement.mode model | hybrid).
struct StageRole {
  StageLayout layout;
  uint32_t stage = 0, replica = 0;
  std::vector<uint32_t> keys;  // the tensors of its layers
  std::size_t in_width = 0;    // floats per sample it receives from the previous stage
  std::size_t out_width = 0;   // floats per sample it sends to the next stage
  int classes = 0;             // labels travel with the activations and lie in [0, classes)
};

// One activation (forward) or activation-gradient (backward) message between stages, as received.
struct StageMessage {
  uint64_t iteration = 0;
  uint32_t micro_batch = 0, samples = 0;
  // An evaluation pass's batch count (micro_batch is then the batch); 0: training.
  uint32_t eval_batches = 0;
  zmq::message_t values;  // samples x width floats
  zmq::message_t labels;  // forward only: samples int32 labels
};

}  // namespace psrt
