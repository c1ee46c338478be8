#include "engine/cuda/gpu_network.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "engine/cuda/device_buffer.h"
#include "engine/cuda/gpu_layer_stack.h"
#include "engine/cuda/gpu_layers.h"
#include "engine/layer.h"
#include "engine/network.h"
#include "engine/predictions.h"

namespace psrt::engine::cuda {

struct GpuNetwork::Device {
  explicit Device(const Network& cpu) : stack(cpu_layers(cpu), cpu.desc().tensors) {}
  // Every layer but the last: the loss (softmax cross-entropy, as Network requires) is run by the
  // network itself, since it needs the labels and yields the loss.
  static std::vector<const Layer*> cpu_layers(const Network& cpu) {
    std::vector<const Layer*> layers;
    for (std::size_t i = 0; i + 1 < cpu.desc().layers.size(); ++i) layers.push_back(&cpu.layer(i));
    return layers;
  }

  GpuContext ctx;                   // first: it checks for a device before anything is allocated
  GpuLayerStack stack;              // tensors by key (the stack's local keys are the keys)
  std::vector<DeviceBuffer> acts;   // acts[0] input, acts[i + 1] output of layer i
  std::vector<DeviceBuffer> dacts;  // gradients w.r.t. acts
  std::vector<DeviceBuffer> eval_acts;  // evaluation's own buffers, up to the logits
  DeviceBuffer workspace;               // shared by all layers: nothing in it outlives a call
  DeviceBuffer sample_loss;             // per-sample losses of the training batch
  DeviceLabels labels;                  // of the training batch
};

GpuNetwork::GpuNetwork(const Network& cpu)
    : desc_(cpu.desc()), dev_(std::make_unique<Device>(cpu)) {
  const std::size_t count = desc_.layers.size();
  widths_.push_back(cpu.input_size());
  for (std::size_t i = 0; i < count; ++i) widths_.push_back(cpu.layer(i).out_size());
  for (const TensorDesc& t : desc_.tensors) upload_param(t.key, cpu.param(t.key));
  dev_->acts.resize(count + 1);
  dev_->dacts.resize(count + 1);
  dev_->eval_acts.resize(count);  // evaluation stops at the logits
}

GpuNetwork::~GpuNetwork() = default;

void GpuNetwork::reserve(int n, bool training) {
  const auto rows = static_cast<std::size_t>(n);
  std::vector<DeviceBuffer>& acts = training ? dev_->acts : dev_->eval_acts;
  for (std::size_t i = 0; i < acts.size(); ++i) acts[i].reserve(rows * widths_[i]);
  if (training) {
    for (std::size_t i = 0; i < dev_->dacts.size(); ++i) dev_->dacts[i].reserve(rows * widths_[i]);
    dev_->sample_loss.reserve(rows);
  }
  dev_->workspace.reserve(dev_->stack.workspace(n));
}

void GpuNetwork::set_batch(const float* images, const int32_t* labels, int n) {
  if (n < 1) throw std::invalid_argument("GpuNetwork::set_batch: n = " + std::to_string(n));
  const int k = classes();
  for (int r = 0; r < n; ++r) {
    if (labels[r] < 0 || labels[r] >= k) {
      throw std::invalid_argument("GpuNetwork::set_batch: label " + std::to_string(labels[r]) +
                                  " of sample " + std::to_string(r) + " is not in [0, " +
                                  std::to_string(k) + ")");
    }
  }
  n_ = n;
  reserve(n, true);
  const auto rows = static_cast<std::size_t>(n);
  copy_to_device(dev_->acts[0].data(), images, rows * input_size());
  dev_->labels.upload(std::span<const int32_t>(labels, rows));
}

void GpuNetwork::forward_layer(std::size_t i) {
  if (i >= desc_.layers.size()) {
    throw std::out_of_range("GpuNetwork::forward_layer: bad layer index");
  }
  if (n_ == 0) throw std::logic_error("GpuNetwork::forward_layer before set_batch");
  Device& d = *dev_;
  if (i == d.stack.size()) {
    loss_ = softmax_xent_forward(d.acts[i].data(), d.labels.data(), d.acts[i + 1].data(),
                                 d.sample_loss.data(), n_, classes());
    return;
  }
  d.stack.forward(d.ctx, i, d.acts, n_, true, d.workspace.data());
}

void GpuNetwork::backward_layer(std::size_t i) {
  if (i >= desc_.layers.size()) {
    throw std::out_of_range("GpuNetwork::backward_layer: bad layer index");
  }
  if (n_ == 0) throw std::logic_error("GpuNetwork::backward_layer before set_batch");
  Device& d = *dev_;
  float* din = i == 0 ? nullptr : d.dacts[i].data();
  if (i == d.stack.size()) {  // the loss: its gradient does not depend on a dout
    if (din != nullptr) {
      softmax_xent_backward(d.acts[i + 1].data(), d.labels.data(), din, n_, classes());
    }
    return;
  }
  d.stack.backward(d.ctx, i, d.acts, d.dacts, din, n_, d.workspace.data());
}

double GpuNetwork::evaluate(const float* images, const int32_t* labels, int n, int batch,
                            const std::function<bool()>& cancelled) {
  if (batch < 1) throw std::invalid_argument("GpuNetwork::evaluate: batch < 1");
  if (n <= 0) return 0.0;
  Device& d = *dev_;
  const std::size_t in = input_size();
  const auto k = static_cast<std::size_t>(classes());
  const std::size_t logits = d.stack.size();  // index of the buffer holding the logits
  std::vector<float> z;
  long correct = 0;
  for (int start = 0; start < n; start += batch) {
    if (cancelled && cancelled()) throw EvaluationCancelled();
    const int m = std::min(batch, n - start);
    const auto rows = static_cast<std::size_t>(m);
    reserve(m, false);
    copy_to_device(d.eval_acts[0].data(), images + static_cast<std::size_t>(start) * in, rows * in);
    for (std::size_t i = 0; i < logits; ++i) {
      d.stack.forward(d.ctx, i, d.eval_acts, m, false, d.workspace.data());
    }
    // The argmax on the host, as Network::evaluate takes it (the first maximum wins).
    z.resize(rows * k);
    copy_to_host(z.data(), d.eval_acts[logits].data(), z.size());
    correct += count_correct(z.data(), labels + start, rows, k);
  }
  return static_cast<double>(correct) / n;
}

const float* GpuNetwork::device_param(uint32_t key) const {
  return dev_->stack.device_param(key);
}

const float* GpuNetwork::device_grad(uint32_t key) const {
  return dev_->stack.device_grad(key);
}

void GpuNetwork::upload_param(uint32_t key, std::span<const float> host) {
  dev_->stack.upload_param(key, host);
}

void GpuNetwork::upload_param_async(uint32_t key, std::span<const float> host) {
  dev_->stack.upload_param_async(key, host);
}

void GpuNetwork::download_param(uint32_t key, std::span<float> host) const {
  dev_->stack.download_param(key, host);
}

void GpuNetwork::download_grad(uint32_t key, std::span<float> host) const {
  dev_->stack.download_grad(key, host);
}

void GpuNetwork::synchronize() const {
  dev_->ctx.synchronize();
}

}  // namespace psrt::engine::cuda
