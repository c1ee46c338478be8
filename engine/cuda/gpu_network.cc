#include "engine/cuda/gpu_network.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "engine/cuda/device_buffer.h"
#include "engine/cuda/gpu_layer.h"
#include "engine/cuda/gpu_layers.h"
#include "engine/layer.h"
#include "engine/network.h"

namespace psrt::engine::cuda {

struct GpuNetwork::Device {
  GpuContext ctx;  // first: it checks for a device before anything is allocated
  // Every layer but the last: the loss (softmax cross-entropy, as Network requires) is run by the
  // network itself, since it needs the labels and yields the loss.
  std::vector<std::unique_ptr<GpuLayer>> layers;
  std::vector<GpuParam> tensors;        // by key
  std::vector<DeviceBuffer> acts;       // acts[0] input, acts[i + 1] output of layer i
  std::vector<DeviceBuffer> dacts;      // gradients w.r.t. acts
  std::vector<DeviceBuffer> eval_acts;  // evaluation's own buffers, up to the logits
  DeviceBuffer workspace;               // shared by all layers: nothing in it outlives a call
  // fused[i]: layer i is a ReLU that layer i - 1 runs with its bias (GpuLayer::forward_relu).
  std::vector<bool> fused;
  DeviceBuffer sample_loss;             // per-sample losses of the training batch
  DeviceLabels labels;                  // of the training batch
};

GpuNetwork::GpuNetwork(const Network& cpu) : desc_(cpu.desc()), dev_(std::make_unique<Device>()) {
  const std::size_t count = desc_.layers.size();
  widths_.push_back(cpu.input_size());
  for (std::size_t i = 0; i < count; ++i) widths_.push_back(cpu.layer(i).out_size());
  for (std::size_t i = 0; i + 1 < count; ++i) {
    dev_->layers.push_back(make_gpu_layer(cpu.layer(i)));
    for (const GpuParam& p : dev_->layers.back()->params()) dev_->tensors.push_back(p);
  }
  // Keys follow the layers and each layer's params() order on both sides; check that they agree.
  if (dev_->tensors.size() != desc_.tensors.size()) {
    throw std::logic_error("GpuNetwork: " + std::to_string(dev_->tensors.size()) +
                           " GPU tensors for " + std::to_string(desc_.tensors.size()) +
                           " tensors of " + desc_.name);
  }
  for (const TensorDesc& t : desc_.tensors) {
    if (dev_->tensors[t.key].value->size() != t.num_elements) {
      throw std::logic_error("GpuNetwork: GPU tensor " + t.name + " has " +
                             std::to_string(dev_->tensors[t.key].value->size()) +
                             " elements, not " + std::to_string(t.num_elements));
    }
    upload_param(t.key, cpu.param(t.key));
  }
  dev_->fused.assign(count, false);
  for (std::size_t i = 0; i + 1 < dev_->layers.size(); ++i) {
    dev_->fused[i + 1] = dev_->layers[i]->fuses_relu() && cpu.layer(i + 1).kind() == "relu";
  }
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
  std::size_t work = 0;
  for (const auto& layer : dev_->layers) work = std::max(work, layer->workspace(n));
  dev_->workspace.reserve(work);
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
  if (i == d.layers.size()) {
    loss_ = softmax_xent_forward(d.acts[i].data(), d.labels.data(), d.acts[i + 1].data(),
                                 d.sample_loss.data(), n_, classes());
    return;
  }
  run_forward(i, d.acts, n_, true);
}

void GpuNetwork::run_forward(std::size_t i, std::vector<DeviceBuffer>& acts, int n, bool training) {
  Device& d = *dev_;
  if (d.fused[i]) return;  // layer i - 1 wrote this ReLU's output
  if (i + 1 < d.fused.size() && d.fused[i + 1]) {
    // acts[i + 1] (the ReLU's input) serves as scratch: nothing reads it afterwards.
    d.layers[i]->forward_relu(d.ctx, acts[i].data(), acts[i + 1].data(), acts[i + 2].data(), n,
                              d.workspace.data());
    return;
  }
  d.layers[i]->forward(d.ctx, acts[i].data(), acts[i + 1].data(), n, training, d.workspace.data());
}

void GpuNetwork::backward_layer(std::size_t i) {
  if (i >= desc_.layers.size()) {
    throw std::out_of_range("GpuNetwork::backward_layer: bad layer index");
  }
  if (n_ == 0) throw std::logic_error("GpuNetwork::backward_layer before set_batch");
  Device& d = *dev_;
  float* din = i == 0 ? nullptr : d.dacts[i].data();
  if (i == d.layers.size()) {  // the loss: its gradient does not depend on a dout
    if (din != nullptr) {
      softmax_xent_backward(d.acts[i + 1].data(), d.labels.data(), din, n_, classes());
    }
    return;
  }
  d.layers[i]->backward(d.ctx, d.acts[i].data(), d.acts[i + 1].data(), d.dacts[i + 1].data(), din,
                        n_, d.workspace.data());
}

double GpuNetwork::evaluate(const float* images, const int32_t* labels, int n, int batch) {
  if (batch < 1) throw std::invalid_argument("GpuNetwork::evaluate: batch < 1");
  if (n <= 0) return 0.0;
  Device& d = *dev_;
  const std::size_t in = input_size();
  const auto k = static_cast<std::size_t>(classes());
  const std::size_t logits = d.layers.size();  // index of the buffer holding the logits
  std::vector<float> z;
  long correct = 0;
  for (int start = 0; start < n; start += batch) {
    const int m = std::min(batch, n - start);
    const auto rows = static_cast<std::size_t>(m);
    reserve(m, false);
    copy_to_device(d.eval_acts[0].data(), images + static_cast<std::size_t>(start) * in, rows * in);
    for (std::size_t i = 0; i < logits; ++i) run_forward(i, d.eval_acts, m, false);
    // The argmax on the host, as Network::evaluate takes it (the first maximum wins).
    z.resize(rows * k);
    copy_to_host(z.data(), d.eval_acts[logits].data(), z.size());
    for (std::size_t r = 0; r < rows; ++r) {
      const float* row = z.data() + r * k;
      const auto best = static_cast<int32_t>(std::max_element(row, row + k) - row);
      if (best == labels[static_cast<std::size_t>(start) + r]) ++correct;
    }
  }
  return static_cast<double>(correct) / n;
}

const float* GpuNetwork::device_param(uint32_t key) const {
  return dev_->tensors.at(key).value->data();
}

const float* GpuNetwork::device_grad(uint32_t key) const {
  return dev_->tensors.at(key).grad->data();
}

namespace {

void check_size(const char* what, const TensorDesc& t, std::size_t host) {
  if (host != t.num_elements) {
    throw std::invalid_argument(std::string("GpuNetwork::") + what + ": " + std::to_string(host) +
                                " floats for tensor " + t.name + " of " +
                                std::to_string(t.num_elements));
  }
}

}  // namespace

void GpuNetwork::upload_param(uint32_t key, std::span<const float> host) {
  check_size("upload_param", desc_.tensors.at(key), host.size());
  dev_->tensors[key].value->upload(host);
}

void GpuNetwork::upload_param_async(uint32_t key, std::span<const float> host) {
  check_size("upload_param_async", desc_.tensors.at(key), host.size());
  dev_->tensors[key].value->upload_async(host);
}

void GpuNetwork::download_param(uint32_t key, std::span<float> host) const {
  check_size("download_param", desc_.tensors.at(key), host.size());
  dev_->tensors[key].value->download(host);
}

void GpuNetwork::download_grad(uint32_t key, std::span<float> host) const {
  check_size("download_grad", desc_.tensors.at(key), host.size());
  dev_->tensors[key].grad->download(host);
}

void GpuNetwork::synchronize() const {
  dev_->ctx.synchronize();
}

}  // namespace psrt::engine::cuda
