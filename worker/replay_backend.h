// The `replay` backend: a model profile (bench/profiles/*.yaml) replayed without real compute.
// Each layer's forward and backward take the profile's time, spent waiting on an emulated device
// (worker/emulated_device.h: layers back to back on the device's clock); gradients have the real
// sizes and fixed values, so the servers' traffic, aggregation and optimizer work are real.
#pragma once

#include <vector>

#include "worker/backend.h"
#include "worker/emulated_device.h"

namespace psrt {

class ReplayBackend final : public Backend {
 public:
  ReplayBackend(const Config& config, uint32_t rank);

  const ModelDesc& desc() const override { return model_; }
  std::span<float> param(uint32_t key) override { return params_.at(key); }
  std::span<const float> grad(uint32_t key) const override { return grads_.at(key); }
  bool grads_stay_put() const override { return true; }
  void begin_iteration(uint64_t) override {}
  void forward_layer(std::size_t layer) override;
  void backward_layer(std::size_t layer) override;
  std::optional<double> loss() const override { return std::nullopt; }
  int batch_samples() const override { return batch_; }
  int64_t iterations_per_epoch() const override { return 0; }

 private:
  ModelDesc model_;
  int batch_;
  std::vector<std::vector<float>> params_;
  std::vector<std::vector<float>> grads_;
  EmulatedDevice device_;  // spends each layer's time
};

}  // namespace psrt
