// The worker's training loop: forward layer by layer, each waiting only for its own parameters
// (bigdl: for all of them); backward layer by layer, each gradient handed to the scheduler the
// moment its layer's backward ends. Progress every job.log_every iterations.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/config.h"
#include "worker/backend.h"
#include "worker/ps_client.h"

namespace psrt {

struct TrainResult {
  uint64_t iterations = 0;
  double seconds = 0;
  double last_loss = 0;
  // Steady-state iteration time: from the end of the first tenth of the run (at least one
  // iteration) to the end, so start-up does not count.
  double steady_ms_per_iteration = 0;
  std::optional<double> test_accuracy;
};

// Iterations the job runs: job.iterations, or job.epochs passes over the worker's shard.
uint64_t planned_iterations(const Config& config, const Backend& backend);

TrainResult train(const Config& config, uint32_t rank, Backend& backend, PsClient& client,
                  Timeline* timeline = nullptr);

// An evaluation every job.eval_every iterations: logged, and printed as
// `PSRT_EVAL iteration=N accuracy=A`.
void report_eval(uint64_t done, double accuracy);

// Writes every tensor's values, in key order, as raw little-endian fp32 (write_param_file).
void dump_params(const std::string& path, Backend& backend);
// Writes `tensors`' values one after the other, raw little-endian fp32, to `path`: whole or not
// at all (core/durable_file.h: no truncated file is left on a full disk). Throws JobError naming
// the path and the system's error.
void write_param_file(const std::string& path, const std::vector<std::span<const float>>& tensors);

}  // namespace psrt
