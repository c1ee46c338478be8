// Model parallelism (placement.mode model | hybrid): which layers each stage of a replica runs,
// which worker is which stage of which replica, and how a batch splits into micro-batches. Every
// process derives the same layout from the same config and model.
//
// Workers are numbered replica-major: worker w is stage w % partitions of replica w / partitions.
// A stage holds a contiguous range of layers in forward order; the first stage reads the data,
// the last holds the loss. With `placement.plan` the ranges are the plan's stages (in pipeline
// order); without one the layers are split evenly by count.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "core/config.h"
#include "core/model.h"

namespace psrt {

struct StageLayout {
  uint32_t stages = 1;
  uint32_t replicas = 1;
  uint32_t micro_batches = 1;
  uint32_t batch = 1;                                 // samples per replica and iteration
  std::vector<std::pair<uint32_t, uint32_t>> ranges;  // [first, last) layer of each stage
  // How much longer a profile's layer times take on each stage's plan device (compute_scale;
  // 1 without a plan). The replay backend waits that long.
  std::vector<double> slowdown;

  uint32_t stage_of(uint32_t worker) const { return worker % stages; }
  uint32_t replica_of(uint32_t worker) const { return worker / stages; }
  uint32_t worker(uint32_t replica, uint32_t stage) const { return replica * stages + stage; }
  // The tensor keys of stage `stage`'s layers, ascending.
  std::vector<uint32_t> keys(uint32_t stage, const ModelDesc& model) const;
  // Micro-batch `mb` is rows [first, first + count) of the batch: sizes differ by one at most.
  uint32_t micro_first(uint32_t mb) const { return uint32_t(uint64_t(mb) * batch / micro_batches); }
  uint32_t micro_rows(uint32_t mb) const { return micro_first(mb + 1) - micro_first(mb); }
  uint32_t max_micro_rows() const { return (batch + micro_batches - 1) / micro_batches; }

  // Test-set evaluation (replica 0's stages, between iterations; none on the replay backend,
  // which has no data): after the final iteration with job.evaluate, and every job.eval_every.
  uint64_t iterations = 0;
  uint64_t eval_every = 0;
  bool eval_at_end = false;
  bool evaluates_after(uint64_t done) const {
    const bool every = eval_every > 0 && done % eval_every == 0 && done <= iterations;
    return done == iterations ? eval_at_end || every : every;
  }
};

// Throws ConfigError naming placement.plan or placement.partitions when the plan does not fit the
// model (unknown layers, a stage that is not one contiguous range) or the partition count.
StageLayout stage_layout(const Config& config, const ModelDesc& model);

}  // namespace psrt
