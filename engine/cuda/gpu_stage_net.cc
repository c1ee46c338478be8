#include "engine/cuda/gpu_stage_net.h"

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "engine/cuda/device_buffer.h"
#include "engine/cuda/gpu_layer_stack.h"
#include "engine/cuda/gpu_layers.h"
#include "engine/init.h"
#include "engine/layer.h"
#include "engine/predictions.h"
#include "engine/stage_net.h"

namespace psrt::engine::cuda {

struct GpuStageNet::Slot {
  int n = 0;
  std::vector<DeviceBuffer> acts;   // acts[i]: input of local layer i; back(): output
  std::vector<DeviceBuffer> dacts;  // gradients w.r.t. acts
  DeviceBuffer sample_loss;         // the last stage: per-sample losses
  DeviceLabels labels;
  std::vector<int32_t> host_labels;
  std::vector<uint64_t> mask_seed;  // by local layer: the dropout mask its forward drew
  float loss = 0;
  // The boundaries on the host: input (uploaded), output and input gradient (downloaded into),
  // output gradient (uploaded).
  std::vector<float> in, dout;
  mutable std::vector<float> out, din;
};

struct GpuStageNet::Device {
  Device(const StageNet& cpu, std::vector<const Layer*> layers, std::vector<TensorDesc> tensors)
      : stack(layers, std::move(tensors)) {
    widths.push_back(cpu.in_width());
    for (uint32_t l = cpu.first(); l < cpu.last(); ++l) widths.push_back(cpu.layer(l).out_size());
    for (std::size_t k = 0; k < stack.tensor_count(); ++k) {
      sums.emplace_back(stack.tensor_desc(k).num_elements);
    }
    for (uint32_t i = 0; i < cpu.slots(); ++i) {
      auto& s = *slots.emplace_back(std::make_unique<Slot>());
      s.acts.resize(widths.size());
      s.dacts.resize(widths.size());
      s.mask_seed.resize(widths.size() - 1);
    }
  }

  GpuContext ctx;                   // first: it checks for a device before anything is allocated
  GpuLayerStack stack;              // the stage's layers but the loss; local keys from first_key_
  std::vector<std::size_t> widths;  // widths[0] input, widths[i + 1] output of local layer i
  std::vector<DeviceBuffer> sums;   // gradient sums by local key
  DeviceBuffer workspace;           // shared by all layers and slots: nothing outlives a call
  std::vector<std::unique_ptr<Slot>> slots;
};

namespace {

// The CPU stage's layers but the loss, and its tensors' descriptions in key order.
std::vector<const Layer*> gpu_layers_of(const StageNet& cpu) {
  std::vector<const Layer*> layers;
  const uint32_t end = cpu.holds_loss() ? cpu.last() - 1 : cpu.last();
  for (uint32_t l = cpu.first(); l < end; ++l) layers.push_back(&cpu.layer(l));
  return layers;
}

std::vector<TensorDesc> tensors_of(const StageNet& cpu) {
  std::vector<TensorDesc> tensors;
  for (const TensorDesc& t : cpu.desc().tensors) {
    if (t.layer >= cpu.first() && t.layer < cpu.last()) tensors.push_back(t);
  }
  return tensors;
}

std::size_t rows(int n) {
  return static_cast<std::size_t>(n);
}

}  // namespace

GpuStageNet::GpuStageNet(const StageNet& cpu)
    : desc_(cpu.desc()), first_(cpu.first()), last_(cpu.last()), classes_(cpu.classes()) {
  for (const TensorDesc& t : desc_.tensors) first_key_ += t.layer < first_ ? 1 : 0;
  dev_ = std::make_unique<Device>(cpu, gpu_layers_of(cpu), tensors_of(cpu));
  for (std::size_t k = 0; k < dev_->stack.tensor_count(); ++k) {
    const auto key = static_cast<uint32_t>(first_key_ + k);
    upload_param(key, cpu.param(key));
    dev_->sums[k].zero();
  }
  // The dropout streams continue the CPU layers' (make_gpu_layer copies seed and next step).
}

GpuStageNet::~GpuStageNet() = default;

std::size_t GpuStageNet::in_width() const {
  return dev_->widths.front();
}
std::size_t GpuStageNet::out_width() const {
  return dev_->widths.back();
}

void GpuStageNet::reseed_randomness(uint64_t seed) {
  for (std::size_t i = 0; i < dev_->stack.size(); ++i) {
    dev_->stack.layer(i).reseed_randomness(mix_seed(seed, first_ + i));
  }
}

void GpuStageNet::skip_random_steps(uint64_t steps) {
  for (std::size_t i = 0; i < dev_->stack.size(); ++i) {
    dev_->stack.layer(i).skip_random_steps(steps);
  }
}

GpuStageNet::Slot& GpuStageNet::slot_at(uint32_t slot) const {
  return *dev_->slots.at(slot);
}

GpuStageNet::Slot& GpuStageNet::slot_for(const char* what, uint32_t slot, uint32_t layer) const {
  Slot& s = slot_at(slot);
  if (s.n == 0) throw std::logic_error(std::string("GpuStageNet::") + what + " before input");
  if (layer < first_ || layer >= last_) {
    throw std::out_of_range(std::string("GpuStageNet::") + what + ": layer " +
                            std::to_string(layer) + " is not in this stage");
  }
  return s;
}

std::size_t GpuStageNet::local_key(uint32_t key) const {
  if (key < first_key_ || key - first_key_ >= dev_->stack.tensor_count()) {
    throw std::out_of_range("GpuStageNet: tensor " + std::to_string(key) + " is not in this stage");
  }
  return key - first_key_;
}

std::span<float> GpuStageNet::input(uint32_t slot, int n) {
  if (n < 1) throw std::invalid_argument("GpuStageNet::input: n = " + std::to_string(n));
  Slot& s = slot_at(slot);
  Device& d = *dev_;
  s.n = n;
  for (std::size_t i = 0; i < d.widths.size(); ++i) {
    s.acts[i].reserve(rows(n) * d.widths[i]);
    s.dacts[i].reserve(rows(n) * d.widths[i]);
  }
  s.sample_loss.reserve(rows(n));
  d.workspace.reserve(d.stack.workspace(n));
  s.in.resize(rows(n) * in_width());
  s.din.resize(rows(n) * in_width());
  s.out.resize(rows(n) * out_width());
  s.dout.resize(rows(n) * out_width());
  return s.in;
}

void GpuStageNet::set_labels(uint32_t slot, std::span<const int32_t> labels) {
  Slot& s = slot_at(slot);
  if (labels.size() != rows(s.n)) throw std::invalid_argument("GpuStageNet: label count");
  for (int32_t l : labels) {
    if (l < 0 || l >= classes_) {
      throw std::invalid_argument("GpuStageNet: label " + std::to_string(l) + " is not in [0, " +
                                  std::to_string(classes_) + ")");
    }
  }
  s.host_labels.assign(labels.begin(), labels.end());
  s.labels.upload(s.host_labels);
}

void GpuStageNet::forward_layer(uint32_t slot, uint32_t layer) {
  Slot& s = slot_for("forward_layer", slot, layer);
  Device& d = *dev_;
  const std::size_t i = layer - first_;
  if (i == 0) copy_to_device(s.acts[0].data(), s.in.data(), s.in.size());
  if (i == d.stack.size()) {
    loss_forward(s);
    return;
  }
  d.stack.forward(d.ctx, i, s.acts, s.n, true, d.workspace.data());
  s.mask_seed[i] = d.stack.layer(i).mask_seed();  // dropout: the mask this forward drew
}

void GpuStageNet::loss_forward(Slot& s) {
  if (s.host_labels.size() != rows(s.n)) throw std::logic_error("GpuStageNet: no labels");
  const std::size_t i = dev_->stack.size();
  s.loss = softmax_xent_forward(s.acts[i].data(), s.labels.data(), s.acts[i + 1].data(),
                                s.sample_loss.data(), s.n, classes_);
}

void GpuStageNet::eval_forward(uint32_t slot) {
  Slot& s = slot_at(slot);
  if (s.n == 0) throw std::logic_error("GpuStageNet::eval_forward before input");
  Device& d = *dev_;
  copy_to_device(s.acts[0].data(), s.in.data(), s.in.size());
  for (std::size_t i = 0; i < d.stack.size(); ++i) {
    d.stack.forward(d.ctx, i, s.acts, s.n, false, d.workspace.data());
  }
}

int64_t GpuStageNet::eval_correct(uint32_t slot) const {
  const Slot& s = slot_at(slot);
  if (!holds_loss()) throw std::logic_error("GpuStageNet::eval_correct: not the last stage");
  if (s.host_labels.size() != rows(s.n)) throw std::logic_error("GpuStageNet: no labels");
  const auto k = static_cast<std::size_t>(classes_);
  // The argmax on the host, as StageNet takes it (the first maximum wins).
  std::vector<float> logits(rows(s.n) * k);
  copy_to_host(logits.data(), s.acts[dev_->stack.size()].data(), logits.size());
  return count_correct(logits.data(), s.host_labels.data(), rows(s.n), k);
}

std::span<const float> GpuStageNet::output(uint32_t slot) const {
  const Slot& s = slot_at(slot);
  copy_to_host(s.out.data(), s.acts.back().data(), s.out.size());
  return s.out;
}

float GpuStageNet::loss(uint32_t slot) const {
  return slot_at(slot).loss;
}

std::span<float> GpuStageNet::output_grad(uint32_t slot) {
  return slot_at(slot).dout;
}

std::span<const float> GpuStageNet::input_grad(uint32_t slot) const {
  const Slot& s = slot_at(slot);
  copy_to_host(s.din.data(), s.dacts.front().data(), s.din.size());
  return s.din;
}

void GpuStageNet::backward_layer(uint32_t slot, uint32_t layer, float loss_scale,
                                 bool first_micro) {
  Slot& s = slot_for("backward_layer", slot, layer);
  Device& d = *dev_;
  const std::size_t i = layer - first_;
  float* din = layer == 0 ? nullptr : s.dacts[i].data();
  if (i == d.stack.size()) {
    loss_backward(s, din, loss_scale);
    return;
  }
  if (!holds_loss() && layer + 1 == last_) {
    copy_to_device(s.dacts.back().data(), s.dout.data(), s.dout.size());
  }
  GpuLayer& l = d.stack.layer(i);
  l.set_mask_seed(s.mask_seed[i]);  // this micro-batch's dropout mask (others ignore it)
  d.stack.backward(d.ctx, i, s.acts, s.dacts, din, s.n, d.workspace.data());
  sum_grads(layer, first_micro);
}

void GpuStageNet::loss_backward(Slot& s, float* din, float loss_scale) {
  if (din == nullptr) return;  // the loss's gradient does not depend on a dout
  const std::size_t i = dev_->stack.size();
  softmax_xent_backward(s.acts[i + 1].data(), s.labels.data(), din, s.n, classes_);
  if (loss_scale != 1.0f) {
    scale_on_device(dev_->ctx, din, rows(s.n) * dev_->widths[i], loss_scale);
  }
}

void GpuStageNet::sum_grads(uint32_t layer, bool first_micro) {
  Device& d = *dev_;
  for (uint32_t key : desc_.layers[layer].tensors) {
    const std::size_t k = local_key(key);
    DeviceBuffer& sum = d.sums[k];
    const DeviceBuffer& g = d.stack.grad(k);
    if (first_micro) {
      copy_on_device(sum.data(), g.data(), sum.size());
    } else {
      add_on_device(d.ctx, g.data(), sum.data(), sum.size());
    }
  }
}

void GpuStageNet::upload_param(uint32_t key, std::span<const float> host) {
  dev_->stack.upload_param(local_key(key), host);
}

void GpuStageNet::upload_param_async(uint32_t key, std::span<const float> host) {
  dev_->stack.upload_param_async(local_key(key), host);
}

void GpuStageNet::download_param(uint32_t key, std::span<float> host) const {
  dev_->stack.download_param(local_key(key), host);
}

void GpuStageNet::download_grad(uint32_t key, std::span<float> host) const {
  const std::size_t k = local_key(key);
  if (host.size() != dev_->sums[k].size()) {
    throw std::invalid_argument("GpuStageNet::download_grad: " + std::to_string(host.size()) +
                                " floats for tensor " + std::to_string(key) + " of " +
                                std::to_string(dev_->sums[k].size()));
  }
  dev_->sums[k].download(host);
}

const float* GpuStageNet::device_grad(uint32_t key) const {
  return dev_->sums[local_key(key)].data();
}

void GpuStageNet::synchronize() const {
  dev_->ctx.synchronize();
}

}  // namespace psrt::engine::cuda
