// The `native` backend: the engine's network on OpenBLAS, fed Fashion-MNIST batches sharded by
// rank and reshuffled each epoch.
#pragma once

#include <memory>

#include "worker/backend.h"
#include "worker/batch_source.h"
#include "engine/network.h"

namespace psrt {

class NativeBackend final : public Backend {
 public:
  NativeBackend(const Config& config, uint32_t rank);

  const ModelDesc& desc() const override { return net_->desc(); }
  std::span<float> param(uint32_t key) override { return net_->param(key); }
  std::span<const float> grad(uint32_t key) const override { return net_->grad(key); }
  bool grads_stay_put() const override { return true; }
  void begin_iteration(uint64_t iteration) override;
  void resume_at(uint64_t iteration) override { net_->skip_random_steps(iteration); }
  void forward_layer(std::size_t layer) override { net_->forward_layer(layer); }
  void backward_layer(std::size_t layer) override { net_->backward_layer(layer); }
  std::optional<double> loss() const override { return net_->loss(); }
  int batch_samples() const override { return batch_; }
  int64_t iterations_per_epoch() const override { return source_.iterations_per_epoch(); }
  std::optional<double> evaluate(const std::function<bool()>& cancelled = {}) override;

 private:
  int batch_;
  std::unique_ptr<engine::Network> net_;
  BatchSource source_;
  int eval_batch_;  // samples per evaluation batch (engine/memory_estimate.h)
};

// Worker `rank`'s replica of the job's network: the initial values of job.seed (the same on every
// worker), and its own dropout masks (reseeded from job.seed and the rank).
std::unique_ptr<engine::Network> build_replica(const Config& config, uint32_t rank);

}  // namespace psrt
