#include "engine/network.h"

#include <algorithm>
#include <stdexcept>

#include "core/status.h"
#include "engine/arch_builders.h"
#include "engine/init.h"
#include "engine/layer.h"
#include "engine/predictions.h"
#include "engine/softmax_xent.h"

namespace psrt::engine {

void describe_layer(Layer& layer, ModelDesc& desc) {
  LayerDesc ld;
  ld.name = layer.name();
  ld.kind = std::string(layer.kind());
  ld.forward_flops = layer.forward_flops();
  ld.activation_elements = layer.out_size();
  std::vector<std::pair<std::string, uint64_t>> tensors;
  for (const ParamShape& shape : layer.param_shapes()) {  // nothing allocated
    tensors.emplace_back(layer.name() + "." + shape.suffix, shape.size);
  }
  desc.add_layer(std::move(ld), tensors);
}

Network::Network(std::string name, std::vector<std::unique_ptr<Layer>> layers, uint64_t seed)
    : layers_(std::move(layers)) {
  desc_.name = std::move(name);
  if (layers_.empty()) throw ConfigError("network '" + desc_.name + "': no layers");
  loss_layer_ = dynamic_cast<SoftmaxXent*>(layers_.back().get());
  if (loss_layer_ == nullptr) {
    throw ConfigError("network '" + desc_.name + "': the last layer must be softmax_xent, not " +
                      std::string(layers_.back()->kind()));
  }
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    Layer& layer = *layers_[i];
    if (i > 0 && layer.in_size() != layers_[i - 1]->out_size()) {
      throw ConfigError("network '" + desc_.name + "': layer " + layer.name() + " takes " +
                        std::to_string(layer.in_size()) + " elements but " +
                        layers_[i - 1]->name() + " gives " +
                        std::to_string(layers_[i - 1]->out_size()));
    }
    layer.init_params(mix_seed(seed, i));
    describe_layer(layer, desc_);
    for (const ParamSlot& slot : layer.params()) {
      values_.push_back(slot.value);
      grads_.push_back(slot.grad);
    }
  }
  acts_.resize(layers_.size() + 1);
  dacts_.resize(layers_.size() + 1);
  eval_acts_.resize(layers_.size());  // evaluation stops at the logits
}

Network::~Network() = default;

std::size_t Network::input_size() const {
  return layers_.front()->in_size();
}

int Network::classes() const {
  return static_cast<int>(loss_layer_->in_size());
}

void Network::reseed_randomness(uint64_t seed) {
  for (std::size_t i = 0; i < layers_.size(); ++i) layers_[i]->reseed_randomness(mix_seed(seed, i));
}

void Network::skip_random_steps(uint64_t steps) {
  for (auto& layer : layers_) layer->skip_random_steps(steps);
}

std::span<float> Network::param(uint32_t key) {
  return values_.at(key);
}

std::span<const float> Network::param(uint32_t key) const {
  return values_.at(key);
}

std::span<const float> Network::grad(uint32_t key) const {
  return grads_.at(key);
}

void Network::resize_buffers(std::vector<std::vector<float>>& bufs, int n) const {
  const auto rows = static_cast<std::size_t>(n);
  for (std::size_t i = 0; i < bufs.size(); ++i) {
    const std::size_t width = i == 0 ? input_size() : layers_[i - 1]->out_size();
    bufs[i].resize(rows * width);
  }
}

void Network::set_batch(const float* images, const int32_t* labels, int n) {
  if (n < 1) throw std::invalid_argument("Network::set_batch: n = " + std::to_string(n));
  const int k = classes();
  for (int r = 0; r < n; ++r) {
    if (labels[r] < 0 || labels[r] >= k) {
      throw std::invalid_argument("Network::set_batch: label " + std::to_string(labels[r]) +
                                  " of sample " + std::to_string(r) + " is not in [0, " +
                                  std::to_string(k) + ")");
    }
  }
  n_ = n;
  resize_buffers(acts_, n);
  resize_buffers(dacts_, n);
  std::copy(images, images + acts_[0].size(), acts_[0].begin());
  labels_.assign(labels, labels + n);
  loss_layer_->set_labels(labels_.data());
}

void Network::forward_layer(std::size_t i) {
  if (i >= layers_.size()) throw std::out_of_range("Network::forward_layer: bad layer index");
  if (n_ == 0) throw std::logic_error("Network::forward_layer before set_batch");
  layers_[i]->forward(acts_[i].data(), acts_[i + 1].data(), n_, true);
}

float Network::loss() const {
  return loss_layer_->loss();
}

void Network::backward_layer(std::size_t i) {
  if (i >= layers_.size()) throw std::out_of_range("Network::backward_layer: bad layer index");
  if (n_ == 0) throw std::logic_error("Network::backward_layer before set_batch");
  const float* dout = i + 1 == layers_.size() ? nullptr : dacts_[i + 1].data();
  float* din = i == 0 ? nullptr : dacts_[i].data();
  layers_[i]->backward(acts_[i].data(), acts_[i + 1].data(), dout, din, n_);
}

double Network::evaluate(const float* images, const int32_t* labels, int n, int batch,
                         const std::function<bool()>& cancelled) {
  if (batch < 1) throw std::invalid_argument("Network::evaluate: batch < 1");
  if (n <= 0) return 0.0;
  const std::size_t in = input_size();
  const auto k = static_cast<std::size_t>(classes());
  const std::size_t logits = layers_.size() - 1;  // index of the buffer holding the logits
  long correct = 0;
  for (int start = 0; start < n; start += batch) {
    if (cancelled && cancelled()) throw EvaluationCancelled();
    const int m = std::min(batch, n - start);
    resize_buffers(eval_acts_, m);
    const float* src = images + static_cast<std::size_t>(start) * in;
    std::copy(src, src + static_cast<std::size_t>(m) * in, eval_acts_[0].begin());
    for (std::size_t i = 0; i < logits; ++i) {
      layers_[i]->forward(eval_acts_[i].data(), eval_acts_[i + 1].data(), m, false);
    }
    correct += count_correct(eval_acts_[logits].data(), labels + start, std::size_t(m), k);
  }
  return static_cast<double>(correct) / n;
}

}  // namespace psrt::engine
