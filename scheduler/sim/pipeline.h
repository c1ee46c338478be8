// Prices a model-parallel plan (core/plan.h): pipelined execution of the stages with GPipe's
// fill-and-drain micro-batch schedule, activations and activation gradients over the device links,
// and each device's gradient push to the parameter servers in any push mode.
//
// What is simulated:
//  - Each device runs its tasks one at a time in a fixed order: the forward of every micro-batch
//    (micro-batch by micro-batch, its layers in topological order), then the backward of every
//    micro-batch (its layers in reverse order). A layer's time on a device is scaled by the
//    device's GFLOPS (core layer_ms) and divided by the number of micro-batches.
//  - Forward of (m, l) waits for the activation of (m, u) of each input u; from another device it
//    is sent once per (u, m, receiving device) on the link between the two, a FIFO channel per
//    ordered pair: latency + 4 * micro_batch * activation_elements(u) / bandwidth. Backward of
//    (m, u) waits for the gradient of (m, u) from each device that read it, sent back likewise.
//  - When the last micro-batch's backward of a layer ends, its tensors' gradients go to the
//    servers (chunks and their servers as the runtime's shard map places them) and the new
//    values come back (scheduler/sim/push_link.h): each device and each server has its own full
//    duplex link, so the stages' pushes share a server's link only when they meet there in time;
//    each device sends in its push mode's order. In the next iteration the forward of a layer
//    waits for its parameters. With R replicas each piece reaches its server R times.
//  - With a calibration, every message also costs its sender's and its receiver's I/O thread
//    time (per message, and per byte received), on cores the processes share when host_cores is
//    set (scheduler/sim/host_cpu.h): an activation's receiver pays before the stage can use it.
// The prediction is the last iteration's duration (from the previous iteration's end, when its
// last parameters were back, to this one's), so pipelining across iterations counts. Memory per
// device is core's memory model. Deterministic.
#pragma once

#include <cstdint>
#include <vector>

#include "core/model.h"
#include "core/sharding.h"
#include "core/plan.h"
#include "scheduler/mode.h"
#include "scheduler/sim/calibration.h"

namespace psrt::sim {

struct PipelineOptions {
  Mode mode = Mode::kPreemptive;
  uint64_t chunk_bytes = 4u << 20;
  uint32_t iterations = 3;  // >= 1; the last is reported
  uint32_t replicas = 1;    // data-parallel copies of the pipeline
  uint32_t servers = 1;
  // The runtime's I/O work per message and per byte (calibration.h; default: none) and the cores
  // the devices' and servers' processes share (0: each process has cores of its own).
  Calibration calibration;
  uint32_t host_cores = 0;
  // The runtime's shard map for this model, mode and chunk size (shard_map_for); null: built
  // here. A search that prices many plans of one model builds it once.
  const ShardMap* shards = nullptr;
};

struct PipelineResult {
  double step_ms = 0;
  std::vector<double> iteration_end_ms;
  std::vector<double> device_busy_ms;  // compute per iteration
  std::vector<MemoryUse> memory;
  uint64_t cut_bytes = 0;    // per iteration
  bool fits = true;          // every device within its memory
  std::string over_memory;   // core memory_violation() when it does not fit
};

// Throws std::invalid_argument when the plan does not match the model (sizes, device indices).
PipelineResult simulate_pipeline(const ModelDesc& model, const Plan& plan,
                                 const PipelineOptions& options);

}  // namespace psrt::sim
