// The `gpu` backend: the engine's network on one CUDA device (engine::cuda::GpuNetwork), fed the
// same Fashion-MNIST batches as the native backend and starting from the same parameters.
// Parameters and gradients live in device memory, so that the compressor can take a gradient
// where backward left it (device_grad). param(key) is a host staging copy: the runtime writes
// received values into it and params_ready(layer) queues their upload (pinned memory, no wait);
// grad(key) copies a gradient into a host mirror.
//
// Compiled only into CUDA builds (worker/CMakeLists.txt); elsewhere make_backend answers
// `model.backend: gpu` with a ConfigError. Plain C++: no CUDA headers.
#pragma once

#include <memory>
#include <vector>

#include "worker/backend.h"
#include "worker/batch_source.h"
#include "engine/cuda/device_buffer.h"

namespace psrt {

namespace engine::cuda {
class GpuNetwork;
}

// Makes the worker's CUDA device current on the calling thread (model.device, or auto: the local
// rank round robin over the devices). Throws ConfigError "model.backend gpu: no CUDA device ..."
// where cudaGetDeviceCount finds none (asked before any other CUDA call), or for a model.device
// this machine lacks. The gpu backend and the gpu stages (gpu_stage.h) call it first.
void use_worker_device(const Config& config, uint32_t rank);

class GpuBackend final : public Backend {
 public:
  // Throws ConfigError "model.backend gpu: no CUDA device ..." where cudaGetDeviceCount finds no
  // device (checked before anything else), and ConfigError for the model and the data as the
  // native backend does.
  GpuBackend(const Config& config, uint32_t rank);
  ~GpuBackend() override;

  const ModelDesc& desc() const override;
  std::span<float> param(uint32_t key) override { return staging_.at(key).span(); }
  std::span<const float> grad(uint32_t key) const override;  // copies from the device
  bool grads_stay_put() const override { return true; }
  const float* device_grad(uint32_t key) const override;
  void params_ready(std::size_t layer) override;

  void begin_iteration(uint64_t iteration) override;
  void forward_layer(std::size_t layer) override;
  void backward_layer(std::size_t layer) override;
  std::optional<double> loss() const override;
  int batch_samples() const override { return batch_; }
  int64_t iterations_per_epoch() const override { return source_.iterations_per_epoch(); }
  // Uploads every staging tensor first: the runtime's newest values, which no params_ready has
  // taken to the device yet when training has ended.
  std::optional<double> evaluate(const std::function<bool()>& cancelled = {}) override;

 private:
  int batch_;
  std::unique_ptr<engine::cuda::GpuNetwork> net_;
  BatchSource source_;
  // By key, in pinned memory: params_ready uploads without a wait. The runtime writes a tensor's
  // new values only after this worker pushed its gradient, for which the GPU had finished that
  // layer's backward, queued after the previous upload: the copy has run by then.
  std::vector<engine::cuda::PinnedBuffer> staging_;
  mutable std::vector<std::vector<float>> grad_host_;  // by key, filled by grad()
};

}  // namespace psrt
