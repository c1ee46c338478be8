// Internal to GpuNetwork and GpuStageNet: the GPU versions of a run of consecutive CPU layers
// (a whole network but its loss, or one pipeline stage's layers but the loss), with their
// parameter tensors numbered locally 0, 1, ... in the layers' params() order, the ReLUs that run
// fused with the layer before them, and the forward and backward over caller-owned activation
// buffers (acts[i]: input of local layer i, acts[i + 1] its output; dacts the gradients). Both
// networks run their layers through this one class, so a stage computes exactly what the whole
// network computes for the same layers. Plain C++ (no CUDA headers).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/model.h"
#include "engine/cuda/device_buffer.h"
#include "engine/cuda/gpu_layer.h"

namespace psrt::engine {
class Layer;
}

namespace psrt::engine::cuda {

class GpuLayerStack {
 public:
  // `cpu`: the layers in order (no softmax_xent); `tensors`: the descriptions of their parameter
  // tensors in the same order (their keys may start anywhere). The device tensors are allocated,
  // not filled: upload_param fills them. Throws std::logic_error when the GPU layers' tensors do
  // not match `tensors` in count or size, std::invalid_argument for a layer without a GPU version.
  GpuLayerStack(const std::vector<const Layer*>& cpu, std::vector<TensorDesc> tensors);
  ~GpuLayerStack();
  GpuLayerStack(const GpuLayerStack&) = delete;
  GpuLayerStack& operator=(const GpuLayerStack&) = delete;

  std::size_t size() const { return layers_.size(); }
  GpuLayer& layer(std::size_t i) { return *layers_.at(i); }
  std::size_t tensor_count() const { return tensors_.size(); }
  // The largest workspace any layer needs for n samples.
  std::size_t workspace(int n) const;

  // Local layer i's forward, acts as above, with a ReLU fused into the layer before it
  // (GpuLayer::forward_relu) where both are in the stack: the ReLU's call then does nothing and
  // the fused layer's output buffer serves as scratch.
  void forward(GpuContext& ctx, std::size_t i, std::vector<DeviceBuffer>& acts, int n,
               bool training, float* workspace);
  // Local layer i's backward; `din` nullptr: nobody needs the input gradient.
  void backward(GpuContext& ctx, std::size_t i, const std::vector<DeviceBuffer>& acts,
                const std::vector<DeviceBuffer>& dacts, float* din, int n, float* workspace);

  // Tensor `local` (0 .. tensor_count() - 1; std::out_of_range otherwise). The host spans must
  // hold exactly its element count (std::invalid_argument otherwise); a download waits for the
  // queued work; upload_param_async does not wait (GpuNetwork::upload_param_async).
  const TensorDesc& tensor_desc(std::size_t local) const { return descs_.at(local); }
  DeviceBuffer& value(std::size_t local) { return *tensors_.at(local).value; }
  DeviceBuffer& grad(std::size_t local) { return *tensors_.at(local).grad; }
  const float* device_param(std::size_t local) const { return tensors_.at(local).value->data(); }
  const float* device_grad(std::size_t local) const { return tensors_.at(local).grad->data(); }
  void upload_param(std::size_t local, std::span<const float> host);
  void upload_param_async(std::size_t local, std::span<const float> host);
  void download_param(std::size_t local, std::span<float> host) const;
  void download_grad(std::size_t local, std::span<float> host) const;

 private:
  std::vector<std::unique_ptr<GpuLayer>> layers_;
  std::vector<GpuParam> tensors_;  // by local key
  std::vector<TensorDesc> descs_;  // by local key
  std::vector<bool> fused_;        // fused_[i]: layer i is a ReLU run by layer i - 1
};

}  // namespace psrt::engine::cuda
