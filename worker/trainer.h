// The worker's training loop: forward layer by layer, each waiting only for its own parameters
// (bigdl: for all of them); backward layer by layer, each gradient handed to the scheduler the
// moment its layer's backward ends. Progress every job.log_every iterations.
#pragma once

#include <cstdint>

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

// Writes every tensor's values, in key order, as raw little-endian fp32.
void dump_params(const std::string& path, Backend& backend);

}  // namespace psrt
