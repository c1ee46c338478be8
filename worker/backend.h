// A worker's compute backend: runs one layer at a time so the runtime can wait for that layer's
// parameters before its forward and push its gradients the moment its backward ends.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "core/config.h"
#include "core/model.h"

namespace psrt {

// What a gpu backend or gpu stage says in a build without CUDA (gpu_backend.cc and gpu_stage.cc
// need the CUDA engine, which CMake builds only where nvcc is found).
inline constexpr const char* kBuiltWithoutCuda =
    "model.backend gpu: this psrt-worker was built without CUDA (configure with nvcc available "
    "and -DPSRT_CUDA=AUTO or ON)";

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const ModelDesc& desc() const = 0;
  // Parameter storage of tensor `key`: the runtime writes received values here.
  virtual std::span<float> param(uint32_t key) = 0;
  // The gradient of tensor `key` from the last backward, in host memory. A device backend copies
  // it from the GPU on this call (prefer device_grad there).
  virtual std::span<const float> grad(uint32_t key) const = 0;
  // Whether grad(key) is the same storage on every call, written only by the backward_layer of
  // key's layer or by grad(key) itself: the runtime then sends from it without a copy, and
  // reclaims it before that layer's next backward (PsClient::lend).
  virtual bool grads_stay_put() const { return false; }

  // Device backends (the GPU engine) keep parameters and gradients in GPU memory:
  // - device_grad(key) is the gradient in device memory (CUDA pointer, num_elements floats), valid
  //   until the next backward; nullptr for host backends. The compressor reads it there. It is
  //   final in the order of the default CUDA stream: a reader on another stream first waits for
  //   an event recorded on the default stream after backward_layer (backward_layer does not wait).
  // - param(key) is a host staging copy: the runtime writes received values into it, then calls
  //   params_ready(layer) on the compute thread before that layer's forward, which uploads them.
  virtual const float* device_grad(uint32_t /*key*/) const { return nullptr; }
  virtual void params_ready(std::size_t /*layer*/) {}

  virtual void begin_iteration(uint64_t iteration) = 0;  // loads the iteration's batch
  // A resumed job starts at `iteration`: randomness that advances each iteration (dropout masks)
  // moves to where an uninterrupted run would have it. The batches are a function of the
  // iteration already (data::BatchSampler).
  virtual void resume_at(uint64_t /*iteration*/) {}
  virtual void forward_layer(std::size_t layer) = 0;
  virtual void backward_layer(std::size_t layer) = 0;
  virtual std::optional<double> loss() const = 0;  // none for backends without a real loss
  virtual int batch_samples() const = 0;
  // Iterations in one pass over this worker's data shard (0: no notion of epochs).
  virtual int64_t iterations_per_epoch() const = 0;
  // Test-set accuracy with the current parameters, if the backend can evaluate; nullopt too when
  // `cancelled` said so between batches (the job ended meanwhile).
  virtual std::optional<double> evaluate(const std::function<bool()>& cancelled = {}) {
    (void)cancelled;
    return std::nullopt;
  }
};

// Builds the backend the config asks for. Throws ConfigError.
std::unique_ptr<Backend> make_backend(const Config& config, uint32_t rank);

}  // namespace psrt
