#include "worker/gpu_backend.h"

#include "core/status.h"
#include "worker/engine/cuda/device_buffer.h"
#include "worker/engine/cuda/gpu_network.h"
#include "worker/engine/network.h"
#include "worker/native_backend.h"

namespace psrt {
namespace {

// The native backend's network, built on the host from the same seed, then copied to the device.
std::unique_ptr<engine::cuda::GpuNetwork> network_on_device(const Config& config, uint32_t rank) {
  // Asked first: on a machine without a GPU this is the one CUDA call that fails cleanly.
  if (engine::cuda::device_count() == 0) {
    throw ConfigError(
        "model.backend gpu: no CUDA device (cudaGetDeviceCount found none or failed; use "
        "model.backend native on this machine)");
  }
  const auto cpu = build_replica(config, rank);
  return std::make_unique<engine::cuda::GpuNetwork>(*cpu);
}

}  // namespace

GpuBackend::GpuBackend(const Config& config, uint32_t rank)
    : batch_(config.job.batch_size),
      net_(network_on_device(config, rank)),
      source_(config, rank, net_->input_size()) {
  const auto& tensors = net_->desc().tensors;
  staging_.resize(tensors.size());
  grad_host_.resize(tensors.size());
  for (const auto& t : tensors) {
    staging_[t.key].resize(t.num_elements);
    net_->download_param(t.key, staging_[t.key]);
    grad_host_[t.key].resize(t.num_elements);
  }
}

GpuBackend::~GpuBackend() = default;

const ModelDesc& GpuBackend::desc() const {
  return net_->desc();
}

std::span<const float> GpuBackend::grad(uint32_t key) const {
  std::vector<float>& host = grad_host_.at(key);
  net_->download_grad(key, host);
  return host;
}

const float* GpuBackend::device_grad(uint32_t key) const {
  return net_->device_grad(key);
}

void GpuBackend::params_ready(std::size_t layer) {
  for (const uint32_t key : net_->desc().layers.at(layer).tensors) {
    net_->upload_param(key, staging_[key]);
  }
}

void GpuBackend::begin_iteration(uint64_t iteration) {
  const int n = source_.load(iteration);
  net_->set_batch(source_.images(), source_.labels(), n);
}

void GpuBackend::forward_layer(std::size_t layer) {
  net_->forward_layer(layer);
}

void GpuBackend::backward_layer(std::size_t layer) {
  net_->backward_layer(layer);
  // Backend's contract: when backward_layer returns, the layer's gradients are final. The
  // compressor may read device_grad on a stream of its own, which the default stream does not
  // order against in every case (non-blocking streams), so wait here.
  if (!net_->desc().layers.at(layer).tensors.empty()) net_->synchronize();
}

std::optional<double> GpuBackend::loss() const {
  return net_->loss();
}

std::optional<double> GpuBackend::evaluate() {
  for (const auto& t : net_->desc().tensors) net_->upload_param(t.key, staging_[t.key]);
  const data::Dataset& test = source_.test_set();
  return net_->evaluate(test.images.data(), test.labels.data(), test.n, BatchSource::kEvalBatch);
}

}  // namespace psrt
