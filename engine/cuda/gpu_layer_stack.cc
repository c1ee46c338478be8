#include "engine/cuda/gpu_layer_stack.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "engine/layer.h"

namespace psrt::engine::cuda {
namespace {

void check_size(const char* what, const TensorDesc& t, std::size_t host) {
  if (host != t.num_elements) {
    throw std::invalid_argument(std::string("GPU ") + what + ": " + std::to_string(host) +
                                " floats for tensor " + t.name + " of " +
                                std::to_string(t.num_elements));
  }
}

}  // namespace

GpuLayerStack::GpuLayerStack(const std::vector<const Layer*>& cpu, std::vector<TensorDesc> tensors)
    : descs_(std::move(tensors)) {
  for (const Layer* l : cpu) {
    layers_.push_back(make_gpu_layer(*l));
    for (const GpuParam& p : layers_.back()->params()) tensors_.push_back(p);
  }
  // Keys follow the layers and each layer's params() order on both sides; check that they agree.
  if (tensors_.size() != descs_.size()) {
    throw std::logic_error("GPU layers: " + std::to_string(tensors_.size()) + " GPU tensors for " +
                           std::to_string(descs_.size()) + " tensors");
  }
  for (std::size_t k = 0; k < descs_.size(); ++k) {
    if (tensors_[k].value->size() != descs_[k].num_elements) {
      throw std::logic_error("GPU layers: GPU tensor " + descs_[k].name + " has " +
                             std::to_string(tensors_[k].value->size()) + " elements, not " +
                             std::to_string(descs_[k].num_elements));
    }
  }
  fused_.assign(layers_.size(), false);
  for (std::size_t i = 0; i + 1 < layers_.size(); ++i) {
    fused_[i + 1] = layers_[i]->fuses_relu() && cpu[i + 1]->kind() == "relu";
  }
}

GpuLayerStack::~GpuLayerStack() = default;

std::size_t GpuLayerStack::workspace(int n) const {
  std::size_t work = 0;
  for (const auto& layer : layers_) work = std::max(work, layer->workspace(n));
  return work;
}

void GpuLayerStack::forward(GpuContext& ctx, std::size_t i, std::vector<DeviceBuffer>& acts, int n,
                            bool training, float* workspace) {
  if (fused_.at(i)) return;  // layer i - 1 wrote this ReLU's output
  if (i + 1 < fused_.size() && fused_[i + 1]) {
    // acts[i + 1] (the ReLU's input) serves as scratch: nothing reads it afterwards.
    layers_[i]->forward_relu(ctx, acts[i].data(), acts[i + 1].data(), acts[i + 2].data(), n,
                             workspace);
    return;
  }
  layers_[i]->forward(ctx, acts[i].data(), acts[i + 1].data(), n, training, workspace);
}

void GpuLayerStack::backward(GpuContext& ctx, std::size_t i, const std::vector<DeviceBuffer>& acts,
                             const std::vector<DeviceBuffer>& dacts, float* din, int n,
                             float* workspace) {
  layers_.at(i)->backward(ctx, acts[i].data(), acts[i + 1].data(), dacts[i + 1].data(), din, n,
                          workspace);
}

void GpuLayerStack::upload_param(std::size_t local, std::span<const float> host) {
  check_size("upload_param", descs_.at(local), host.size());
  tensors_[local].value->upload(host);
}

void GpuLayerStack::upload_param_async(std::size_t local, std::span<const float> host) {
  check_size("upload_param_async", descs_.at(local), host.size());
  tensors_[local].value->upload_async(host);
}

void GpuLayerStack::download_param(std::size_t local, std::span<float> host) const {
  check_size("download_param", descs_.at(local), host.size());
  tensors_[local].value->download(host);
}

void GpuLayerStack::download_grad(std::size_t local, std::span<float> host) const {
  check_size("download_grad", descs_.at(local), host.size());
  tensors_[local].grad->download(host);
}

}  // namespace psrt::engine::cuda
