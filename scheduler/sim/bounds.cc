#include "scheduler/sim/bounds.h"

#include <algorithm>
#include <cmath>

namespace psrt::sim {

double LowerBounds::max_ms() const {
  return std::max({compute_ms, link_ms, critical_ms});
}

const char* LowerBounds::binding() const {
  const double m = max_ms();
  if (compute_ms == m) return "compute";
  if (link_ms == m) return "link";
  return "critical";
}

LowerBounds lower_bounds(const ModelDesc& model, const ShardMap& shards, const SimConfig& config) {
  validate(config);
  LowerBounds b;
  b.compute_ms = model.compute_ms();
  auto ms = [&](uint64_t bytes) {
    return static_cast<double>(bytes) * 1000.0 / config.bandwidth_bytes_per_s;
  };

  uint64_t model_bytes = 0;
  for (const auto& c : shards.chunks()) model_bytes += c.bytes();
  uint64_t busiest = model_bytes;
  b.busiest_link = "worker up/down";
  for (uint32_t s = 0; s < shards.num_servers(); ++s) {
    const auto bytes = static_cast<uint64_t>(std::llround(
        double(config.workers) * config.worker_weight * double(shards.server_bytes()[s])));
    if (bytes > busiest) {
      busiest = bytes;
      b.busiest_link = "server " + std::to_string(s) + " up/down";
    }
  }
  b.link_ms = ms(busiest);

  std::size_t first = model.layers.size();
  for (std::size_t l = 0; l < model.layers.size(); ++l) {
    if (!model.layers[l].tensors.empty()) {
      first = l;
      break;
    }
  }
  if (first < model.layers.size()) {
    double compute = 0;
    for (std::size_t l = first; l < model.layers.size(); ++l) {
      compute += model.layers[l].forward_ms + model.layers[l].backward_ms;
    }
    double trip = 0;
    for (uint32_t key : model.layers[first].tensors) {
      for (uint32_t id : shards.tensor_chunks(key)) {
        const uint64_t bytes = shards.chunks()[id].bytes();
        trip = std::max(trip, ms(bytes) + config.latency_ms + aggregation_ms(config, bytes) +
                                  ms(bytes) + config.latency_ms);
      }
    }
    b.critical_ms = compute + trip;
  }
  return b;
}

}  // namespace psrt::sim
