#include "worker/gpu_backend.h"

#include <spdlog/spdlog.h>

#include <string>

#include "core/rank_env.h"
#include "core/status.h"
#include "engine/cuda/device_buffer.h"
#include "engine/cuda/gpu_network.h"
#include "engine/network.h"
#include "engine/predictions.h"
#include "worker/native_backend.h"

namespace psrt {

void use_worker_device(const Config& config, uint32_t rank) {
  // Asked first: on a machine without a GPU this is the one CUDA call that fails cleanly.
  const int count = engine::cuda::device_count();
  if (count == 0) {
    throw ConfigError(
        "model.backend gpu: no CUDA device (cudaGetDeviceCount found none or failed; use "
        "model.backend native on this machine)");
  }
  int device = config.model.device;
  if (device == ModelConfig::kDeviceAuto) {
    // One device per worker of a host, round robin: its local rank where a launcher says it
    // (Slurm, Open MPI, torchrun-style), else its rank (every worker on one host: psrt-launch).
    const int local = local_rank_from_env().value_or(int(rank));
    device = local % count;
    spdlog::info("CUDA device {} of {} (model.device auto, local rank {})", device, count, local);
  } else if (device >= count) {
    throw ConfigError("model.device " + std::to_string(device) + ": this machine has " +
                      std::to_string(count) + " CUDA device" + (count == 1 ? "" : "s") +
                      " (indices 0.." + std::to_string(count - 1) + ")");
  }
  // Before anything is allocated. The worker drives CUDA from this thread only (the network, and
  // the device LACO encoder, which the compute thread calls): the device stays current for both.
  engine::cuda::select_device(device);
}

namespace {

// The native backend's network, built on the host from the same seed, then copied to the device.
std::unique_ptr<engine::cuda::GpuNetwork> network_on_device(const Config& config, uint32_t rank) {
  use_worker_device(config, rank);
  const auto cpu = build_replica(config, rank);
  return std::make_unique<engine::cuda::GpuNetwork>(*cpu);
}

}  // namespace

GpuBackend::GpuBackend(const Config& config, uint32_t rank)
    : batch_(config.job.batch_size),
      net_(network_on_device(config, rank)),
      source_(config, rank, net_->input_size()) {
  const auto& tensors = net_->desc().tensors;
  staging_.reserve(tensors.size());
  grad_host_.resize(tensors.size());
  for (const auto& t : tensors) {
    staging_.emplace_back(t.num_elements);  // keys are 0, 1, ... in order
    net_->download_param(t.key, staging_[t.key].span());
    grad_host_[t.key].resize(t.num_elements);
  }
  // Worker 0 evaluates (at the end, or every job.eval_every: a bad test set was found mid-run).
  if (rank == 0 && config.job.evaluates()) source_.load_test_now();
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
    net_->upload_param_async(key, staging_[key].span());
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
  // No wait: the layer's gradients are final in stream order, which is all their readers need.
  // grad() copies on the network's stream (after the backward), and the device LACO encoder
  // records an event on that stream and makes its own stream wait for it before it reads
  // device_grad. The trainer hands the gradients over right after this call, so the encode of
  // layer l overlaps the backward of layer l - 1, which is already queued.
  net_->backward_layer(layer);
}

std::optional<double> GpuBackend::loss() const {
  return net_->loss();
}

std::optional<double> GpuBackend::evaluate(const std::function<bool()>& cancelled) {
  for (const auto& t : net_->desc().tensors)
    net_->upload_param_async(t.key, staging_[t.key].span());
  const data::Dataset& test = source_.test_set();
  try {
    return net_->evaluate(test.images.data(), test.labels.data(), test.n, BatchSource::kEvalBatch,
                          cancelled);
  } catch (const engine::EvaluationCancelled&) {
    return std::nullopt;
  }
}

}  // namespace psrt
