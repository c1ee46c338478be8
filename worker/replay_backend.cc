#include "worker/replay_backend.h"

#include <string>

#include "core/config_limits.h"
#include "core/profile.h"
#include "core/status.h"

namespace psrt {

namespace {

// The replay backend holds every parameter and its gradient in memory (fp32, 8 bytes each): past
// this (128 GiB) it refuses at start rather than fail in an allocation (the coordinator refuses a
// tensor of more than 2^34 elements too).
constexpr uint64_t kMaxReplayElements = 1ull << 34;

ModelDesc load_replay_profile(const Config& config) {
  ModelDesc model = load_profile(config.model.profile, config.model.scale);
  // Summed with a stop at the cap: tensors of up to 2^63 elements would overflow the total.
  uint64_t total = 0;
  for (const auto& t : model.tensors) {
    total += t.num_elements;
    if (total > kMaxReplayElements) break;
  }
  if (total > kMaxReplayElements) {
    throw ConfigError("model.profile: " + config.model.profile + " holds at least " +
                      std::to_string(total) +
                      " parameters (at model.scale); the replay backend keeps them and their "
                      "gradients in memory and takes at most " +
                      std::to_string(kMaxReplayElements) + " (shrink it with model.scale)");
  }
  // Within the cap, but past this machine's memory: the kernel killed the worker (exit 137) half
  // a minute into its allocation, with nothing said.
  if (const std::string why =
          replay_memory_problem(config.model.profile, total, 1, memory_cap());
      !why.empty()) {
    throw ConfigError(why);
  }
  return model;
}

}  // namespace

ReplayBackend::ReplayBackend(const Config& config, uint32_t rank)
    : model_(load_replay_profile(config)), batch_(config.job.batch_size) {
  params_.resize(model_.tensors.size());
  grads_.resize(model_.tensors.size());
  for (const auto& t : model_.tensors) {
    params_[t.key].assign(t.num_elements, 0.01f);
    auto& g = grads_[t.key];
    g.resize(t.num_elements);
    // Small, varied, and different per worker so aggregation is really exercised.
    for (uint64_t i = 0; i < t.num_elements; ++i) {
      g[i] = 1e-3f * float(int((i * 2654435761u + t.key * 97u + rank * 31u) % 17u) - 8);
    }
  }
}

void ReplayBackend::forward_layer(std::size_t layer) {
  device_.spend(model_.layers.at(layer).forward_ms);
}
void ReplayBackend::backward_layer(std::size_t layer) {
  device_.spend(model_.layers.at(layer).backward_ms);
}

}  // namespace psrt
