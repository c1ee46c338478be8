#include "scheduler/sim/sim_config.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "core/config.h"
#include "scheduler/schedule_policy.h"

namespace psrt::sim {

void validate(const SimConfig& c) {
  auto fail = [](const std::string& what) { throw std::invalid_argument("sim: " + what); };
  if (c.workers == 0) fail("workers must be at least 1");
  if (c.servers == 0) fail("servers must be at least 1");
  if (!(c.bandwidth_bytes_per_s > 0)) fail("bandwidth must be positive");
  if (c.chunk_bytes == 0) fail("chunk_bytes must be positive");
  if (c.credit_bytes == 0) fail("credit_bytes must be positive");
  if (!(c.latency_ms >= 0)) fail("latency_ms must not be negative");
  if (!(c.ack_latency_ms >= 0)) fail("ack_latency_ms must not be negative");
  if (c.host_cores > kMaxHostCores) {
    fail("host_cores must be at most " + std::to_string(kMaxHostCores));
  }
  if (!(c.aggregation_bytes_per_s >= 0)) fail("aggregation rate must not be negative");
  if (c.iterations < 2) fail("iterations must be at least 2");
  if (!(c.release_cycle_ms >= 0) || !std::isfinite(c.release_cycle_ms)) {
    fail("release_cycle_ms must be finite and not negative");
  }
  if (!(c.worker_weight >= 1) || !std::isfinite(c.worker_weight)) {
    fail("worker_weight must be finite and at least 1");
  }
  if (c.batch_bytes > kMaxGroupBytes) {
    fail("batch_bytes must be at most kMaxGroupBytes (2 MiB)");
  }
}

SimConfig reduced_cluster(const SimConfig& config, uint32_t most) {
  SimConfig c = config;
  most = std::max<uint32_t>(most, 1);
  if (c.workers > most) {
    c.worker_weight = config.worker_weight * double(config.workers) / most;
    c.workers = most;
  }
  return c;
}

ShardMap shard_map_for(const ModelDesc& model, const SimConfig& config) {
  return shard_map_for(model, config.servers, config.mode, config.chunk_bytes);
}

double sim_chunk_count(const ModelDesc& model, Mode mode, uint64_t chunk_bytes) {
  const uint64_t unit = SchedulePolicy(mode).unit_bytes(chunk_bytes);
  double chunks = 0;
  for (const auto& t : model.tensors) {
    chunks += std::ceil(double(t.num_elements) * 4 / double(unit));
  }
  return chunks;
}

ShardMap shard_map_for(const ModelDesc& model, uint32_t servers, Mode mode, uint64_t chunk_bytes) {
  const uint64_t unit = SchedulePolicy(mode).unit_bytes(chunk_bytes);
  // Refused before the map is built: a huge model or a tiny chunk size would otherwise take the
  // memory and time of millions of chunks per worker before anything is reported.
  const double chunks = sim_chunk_count(model, mode, chunk_bytes);
  if (chunks > double(kMaxSimChunks)) {
    throw std::invalid_argument("sim: the model splits into " + std::to_string(uint64_t(chunks)) +
                                " chunks of at most " + std::to_string(unit) +
                                " bytes; at most " + std::to_string(kMaxSimChunks) +
                                " are simulated (use larger chunks or a smaller scale)");
  }
  return ShardMap(model, servers, unit);
}

double aggregation_ms(const SimConfig& config, uint64_t chunk_bytes) {
  if (config.aggregation_bytes_per_s <= 0) return 0;
  return static_cast<double>(config.workers) * config.worker_weight *
         static_cast<double>(chunk_bytes) * 1000.0 /
         config.aggregation_bytes_per_s;
}

}  // namespace psrt::sim
