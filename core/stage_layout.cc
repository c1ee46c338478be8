#include "core/stage_layout.h"

#include <string>

#include "core/plan_yaml.h"
#include "core/status.h"

namespace psrt {

std::vector<uint32_t> StageLayout::keys(uint32_t stage, const ModelDesc& model) const {
  std::vector<uint32_t> out;
  for (uint32_t l = ranges.at(stage).first; l < ranges.at(stage).second; ++l) {
    for (uint32_t k : model.layers[l].tensors) out.push_back(k);
  }
  return out;
}

namespace {

std::vector<std::pair<uint32_t, uint32_t>> plan_ranges(const Config& config, const ModelDesc& model,
                                                       std::vector<double>& slowdown) {
  const std::string& path = config.placement.plan;
  if (path == "auto") {
    throw ConfigError(
        "placement.plan: auto is resolved by psrt-launch (it asks psrt-placer); a "
        "daemon started alone needs a plan file");
  }
  const Plan plan = load_plan(path, model);
  const std::vector<Stage> stages = plan_stages(model, plan.device_of_layer);
  if (stages.size() != config.placement.partitions) {
    throw ConfigError("placement.plan: " + path + " has " + std::to_string(stages.size()) +
                      " stages, placement.partitions is " +
                      std::to_string(config.placement.partitions));
  }
  std::vector<std::pair<uint32_t, uint32_t>> out;
  uint32_t next = 0;
  for (std::size_t s = 0; s < stages.size(); ++s) {
    const auto& layers = stages[s].layers;
    for (std::size_t i = 0; i < layers.size(); ++i) {
      if (layers[i] != next + i) {
        throw ConfigError("placement.plan: " + path + ": stage " + std::to_string(s) +
                          " is not one contiguous range of layers in forward order (layer " +
                          model.layers[layers[i]].name + "); the runtime pipelines chains");
      }
    }
    out.emplace_back(next, next + uint32_t(layers.size()));
    slowdown.push_back(compute_scale(model, plan.devices.devices.at(stages[s].device)));
    next += uint32_t(layers.size());
  }
  return out;
}

}  // namespace

StageLayout stage_layout(const Config& config, const ModelDesc& model) {
  StageLayout s;
  const PlacementConfig& p = config.placement;
  if (!p.split()) {
    s.ranges.emplace_back(0, uint32_t(model.layers.size()));
    s.slowdown.assign(1, 1.0);
    s.batch = uint32_t(config.job.batch_size);
    return s;
  }
  s.stages = p.partitions;
  s.replicas = p.replicas(config.cluster.workers);
  s.micro_batches = p.micro_batches;
  s.batch = uint32_t(config.job.batch_size);
  const bool has_data = config.model.backend != "replay";
  s.iterations = uint64_t(config.job.iterations);
  s.eval_every = has_data ? uint64_t(config.job.eval_every) : 0;
  s.eval_at_end = has_data && config.job.evaluate;
  const auto layers = uint32_t(model.layers.size());
  if (layers < s.stages) {
    throw ConfigError("placement.partitions: " + std::to_string(s.stages) + " stages for " +
                      std::to_string(layers) + " layers of " + model.name);
  }
  if (!p.plan.empty()) {
    s.ranges = plan_ranges(config, model, s.slowdown);
  } else {
    for (uint32_t i = 0; i < s.stages; ++i) {
      s.ranges.emplace_back(uint32_t(uint64_t(i) * layers / s.stages),
                            uint32_t(uint64_t(i + 1) * layers / s.stages));
    }
  }
  s.slowdown.resize(s.ranges.size(), 1.0);
  return s;
}

}  // namespace psrt
