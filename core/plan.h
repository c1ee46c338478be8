// A model-parallel plan and what it is made for: the devices (memory, speed, links) and the
// training setup (batch, micro-batches, optimizer). Shared by NetPlacer (placement/), which makes
// plans, the simulator (scheduler/sim), which prices them, and the runtime, which executes them.
//
// Memory model (bytes on device d holding the layer set S; B batch, M micro-batches, m =
// ceil(B/M)):
//   params     P   = 4 * sum_{l in S} parameter elements of l
//   gradients      = P
//   optimizer      = k * P,  k = 0 (sgd), 1 (momentum), 2 (adam)
//   activations    = 4 * m * F * sum_{l in S} activation elements per sample of l,
//                    F = micro-batches in flight = M (GPipe keeps every micro-batch's activations
//                    until its backward)
//   comm buffers   = 2 * 4 * m * (sum of the activation elements of distinct layers outside S read
//                    by S + of distinct layers in S read outside S): one buffer for each activation
//                    that crosses and one for its gradient coming back
//   total          = (2 + k) * P + activations + comm buffers
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/model.h"

namespace psrt {

struct Device {
  std::string name;
  uint64_t memory_bytes = 0;
  double gflops = 0;  // effective throughput; layer times scale by model.device_gflops / gflops
};

struct Link {
  double bytes_per_s = 1.25e9;  // each direction (10 Gbit/s)
  double latency_ms = 0;
  double transfer_ms(uint64_t bytes) const {
    return latency_ms + static_cast<double>(bytes) / bytes_per_s * 1e3;
  }
};

struct DeviceSet {
  std::vector<Device> devices;
  Link link;                            // between any two devices
  std::vector<std::vector<Link>> pair;  // per ordered pair; empty: `link` everywhere
  Link server_link;                     // each device's link to the parameter servers

  const Link& between(uint32_t a, uint32_t b) const { return pair.empty() ? link : pair[a][b]; }
  // The slowest device-to-device link (the placer's cost model uses it for any cut).
  Link slowest() const;
};

enum class OptimizerKind { kSgd, kMomentum, kAdam };
const char* optimizer_name(OptimizerKind o);
// Throws ConfigError naming `key` for an unknown name.
OptimizerKind parse_optimizer(const std::string& name, const std::string& key);
uint32_t optimizer_state_copies(OptimizerKind o);  // k in the memory model

struct TrainingSetup {
  uint32_t batch_size = 32;
  uint32_t micro_batches = 1;
  OptimizerKind optimizer = OptimizerKind::kMomentum;
  uint32_t micro_batch_size() const { return (batch_size + micro_batches - 1) / micro_batches; }
};

// Byte counts that stop at UINT64_MAX instead of wrapping: a profile's sizes are bounded one by
// one, and a sum or product of them that wrapped made a plan fit a device of 1000 bytes.
inline uint64_t sat_add(uint64_t a, uint64_t b) {
  uint64_t r;
  return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}
inline uint64_t sat_mul(uint64_t a, uint64_t b) {
  uint64_t r;
  return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

struct MemoryUse {
  uint64_t params = 0, gradients = 0, optimizer = 0, activations = 0, comm_buffers = 0;
  uint64_t total() const {
    return sat_add(sat_add(sat_add(params, gradients), sat_add(optimizer, activations)),
                   comm_buffers);
  }
};

// Memory of each device under `device_of_layer` (one entry per layer of `model`).
std::vector<MemoryUse> memory_use(const ModelDesc& model,
                                  const std::vector<uint32_t>& device_of_layer, uint32_t devices,
                                  const TrainingSetup& setup);

// How much longer the profile's times take on `device`: model.device_gflops / device.gflops (1 when
// either is not stated).
double compute_scale(const ModelDesc& model, const Device& device);
// Compute milliseconds (forward + backward, whole batch) of `layer` on `device`.
double layer_ms(const ModelDesc& model, uint32_t layer, const Device& device);

struct Plan {
  std::string model;
  std::string placer;                     // who made it ("netplacer", "pipedream", ...)
  std::vector<uint32_t> device_of_layer;  // by layer index
  TrainingSetup setup;
  DeviceSet devices;
  // Predictions and facts, filled by whoever made or priced the plan (0 when unknown).
  double step_ms = 0;
  double search_ms = 0;
  uint64_t cut_bytes = 0;  // per step, activations and their gradients, all micro-batches
  std::vector<double> device_compute_ms;
  std::vector<uint64_t> device_memory_bytes;
};

// Bytes crossing between devices in one step: every (producer, consuming device) pair with the
// consumer on another device carries the producer's activation forward and its gradient back.
uint64_t cut_bytes(const ModelDesc& model, const std::vector<uint32_t>& device_of_layer,
                   uint32_t batch_size);

// The first device over its memory, as "device 'gpu1' needs 9.1 GB but has 8.0 GB (1.1 GB
// missing)"; empty when all fit.
std::string memory_violation(const std::vector<MemoryUse>& use, const DeviceSet& devices);

}  // namespace psrt
