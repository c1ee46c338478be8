#include "engine/stage_net.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "core/status.h"
#include "engine/arch_builders.h"
#include "engine/dropout.h"
#include "engine/init.h"
#include "engine/layer.h"
#include "engine/predictions.h"
#include "engine/softmax_xent.h"

namespace psrt::engine {

struct StageNet::Slot {
  int n = 0;
  std::vector<std::vector<float>> acts;   // acts[i]: input of local layer i; back(): output
  std::vector<std::vector<float>> dacts;  // gradients w.r.t. acts
  std::vector<int32_t> labels;
  std::vector<uint64_t> dropout_step;  // by local layer: the step its forward used
  float loss = 0;
};

StageNet::StageNet(const NetSpec& spec, uint64_t seed, uint32_t first, uint32_t last,
                   uint32_t slots)
    : first_(first), last_(last) {
  ArchLayers arch = arch_layers(spec);
  desc_.name = arch.name;
  for (auto& layer : arch.layers) describe_layer(*layer, desc_);  // as describe_network()
  if (first >= last || last > arch.layers.size() || slots < 1) {
    throw ConfigError("stage of layers [" + std::to_string(first) + ", " + std::to_string(last) +
                      ") with " + std::to_string(slots) + " slots does not fit " + desc_.name +
                      " (" + std::to_string(arch.layers.size()) + " layers)");
  }
  classes_ = static_cast<int>(arch.layers.back()->in_size());
  for (const auto& t : desc_.tensors) first_key_ += t.layer < first ? 1 : 0;
  for (uint32_t i = first; i < last; ++i) {
    Layer& layer = *arch.layers[i];
    layer.init_params(mix_seed(seed, i));
    for (const ParamSlot& slot : layer.params()) {
      values_.push_back(slot.value);
      grads_.push_back(slot.grad);
      sums_.emplace_back(slot.value.size(), 0.0f);
    }
    layers_.push_back(std::move(arch.layers[i]));
  }
  slots_.resize(slots);
  for (Slot& s : slots_) {
    s.acts.resize(layers_.size() + 1);
    s.dacts.resize(layers_.size() + 1);
    s.dropout_step.resize(layers_.size());
  }
}

StageNet::~StageNet() = default;

std::size_t StageNet::in_width() const {
  return layers_.front()->in_size();
}
std::size_t StageNet::out_width() const {
  return layers_.back()->out_size();
}

void StageNet::reseed_randomness(uint64_t seed) {
  for (uint32_t i = first_; i < last_; ++i) at(i).reseed_randomness(mix_seed(seed, i));
}

void StageNet::skip_random_steps(uint64_t steps) {
  for (auto& layer : layers_) layer->skip_random_steps(steps);
}

std::size_t StageNet::local_key(uint32_t key) const {
  if (key < first_key_ || key - first_key_ >= values_.size()) {
    throw std::out_of_range("StageNet: tensor " + std::to_string(key) + " is not in this stage");
  }
  return key - first_key_;
}

std::span<float> StageNet::param(uint32_t key) {
  return values_[local_key(key)];
}

std::span<const float> StageNet::param(uint32_t key) const {
  return values_[local_key(key)];
}

uint32_t StageNet::slots() const {
  return static_cast<uint32_t>(slots_.size());
}

const Layer& StageNet::layer(uint32_t layer) const {
  if (layer < first_ || layer >= last_) {
    throw std::out_of_range("StageNet: layer " + std::to_string(layer) + " is not in this stage");
  }
  return *layers_[layer - first_];
}

std::span<const float> StageNet::grad(uint32_t key) const {
  return sums_[local_key(key)];
}

std::span<float> StageNet::input(uint32_t slot, int n) {
  if (n < 1) throw std::invalid_argument("StageNet::input: n = " + std::to_string(n));
  Slot& s = slots_.at(slot);
  s.n = n;
  for (std::size_t i = 0; i <= layers_.size(); ++i) {
    const std::size_t width = i == 0 ? in_width() : layers_[i - 1]->out_size();
    s.acts[i].resize(std::size_t(n) * width);
    s.dacts[i].resize(std::size_t(n) * width);
  }
  return s.acts[0];
}

void StageNet::set_labels(uint32_t slot, std::span<const int32_t> labels) {
  Slot& s = slots_.at(slot);
  if (labels.size() != std::size_t(s.n)) throw std::invalid_argument("StageNet: label count");
  for (int32_t l : labels) {
    if (l < 0 || l >= classes_) {
      throw std::invalid_argument("StageNet: label " + std::to_string(l) + " is not in [0, " +
                                  std::to_string(classes_) + ")");
    }
  }
  s.labels.assign(labels.begin(), labels.end());
}

void StageNet::forward_layer(uint32_t slot, uint32_t layer) {
  Slot& s = slots_.at(slot);
  if (s.n == 0) throw std::logic_error("StageNet::forward_layer before input");
  const std::size_t i = layer - first_;
  Layer& l = at(layer);
  if (auto* d = dynamic_cast<Dropout*>(&l)) s.dropout_step[i] = d->next_step();
  if (auto* loss = dynamic_cast<SoftmaxXent*>(&l)) {
    if (s.labels.size() != std::size_t(s.n)) throw std::logic_error("StageNet: no labels");
    loss->set_labels(s.labels.data());
  }
  l.forward(s.acts[i].data(), s.acts[i + 1].data(), s.n, true);
  if (auto* loss = dynamic_cast<SoftmaxXent*>(&l)) s.loss = loss->loss();
}

void StageNet::eval_forward(uint32_t slot) {
  Slot& s = slots_.at(slot);
  if (s.n == 0) throw std::logic_error("StageNet::eval_forward before input");
  const std::size_t layers = holds_loss() ? layers_.size() - 1 : layers_.size();
  for (std::size_t i = 0; i < layers; ++i) {
    layers_[i]->forward(s.acts[i].data(), s.acts[i + 1].data(), s.n, false);
  }
}

int64_t StageNet::eval_correct(uint32_t slot) const {
  const Slot& s = slots_.at(slot);
  if (!holds_loss()) throw std::logic_error("StageNet::eval_correct: not the last stage");
  if (s.labels.size() != std::size_t(s.n)) throw std::logic_error("StageNet: no labels");
  const auto k = std::size_t(classes_);
  const std::vector<float>& logits = s.acts[layers_.size() - 1];
  return count_correct(logits.data(), s.labels.data(), std::size_t(s.n), k);
}

std::span<const float> StageNet::output(uint32_t slot) const {
  return slots_.at(slot).acts.back();
}
float StageNet::loss(uint32_t slot) const {
  return slots_.at(slot).loss;
}
std::span<float> StageNet::output_grad(uint32_t slot) {
  return slots_.at(slot).dacts.back();
}
std::span<const float> StageNet::input_grad(uint32_t slot) const {
  return slots_.at(slot).dacts.front();
}

void StageNet::backward_layer(uint32_t slot, uint32_t layer, float loss_scale, bool first_micro) {
  Slot& s = slots_.at(slot);
  const std::size_t i = layer - first_;
  Layer& l = at(layer);
  if (auto* d = dynamic_cast<Dropout*>(&l); d && slots_.size() > 1) {
    // Backward recomputes the mask of the layer's last forward: make that this micro-batch's.
    const uint64_t next = d->next_step();
    d->set_next_step(s.dropout_step[i]);
    d->forward(s.acts[i].data(), s.acts[i + 1].data(), s.n, true);
    d->set_next_step(next);
  }
  auto* loss = dynamic_cast<SoftmaxXent*>(&l);
  if (loss) loss->set_labels(s.labels.data());
  const float* dout = loss ? nullptr : s.dacts[i + 1].data();
  float* din = layer == 0 ? nullptr : s.dacts[i].data();
  l.backward(s.acts[i].data(), s.acts[i + 1].data(), dout, din, s.n);
  if (loss && loss_scale != 1.0f) {
    for (float& g : s.dacts[i]) g *= loss_scale;
  }
  for (uint32_t key : desc_.layers[layer].tensors) {
    const std::size_t k = local_key(key);
    std::vector<float>& sum = sums_[k];
    const std::span<float> g = grads_[k];
    if (first_micro) {
      std::copy(g.begin(), g.end(), sum.begin());
    } else {
      for (std::size_t e = 0; e < sum.size(); ++e) sum[e] += g[e];
    }
  }
}

}  // namespace psrt::engine
