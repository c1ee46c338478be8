// Softmax cross-entropy loss as the network's last layer (kind "softmax_xent", no tensors). Its
// input are the logits, its output the class probabilities. forward() also computes the mean loss
// over the batch against the labels given by set_labels(); backward() ignores dout and writes din =
// (softmax(logits) - onehot(label)) / n, so every gradient upstream is the batch MEAN.
#pragma once

#include <cstdint>

#include "engine/layer.h"

namespace psrt::engine {

class SoftmaxXent final : public Layer {
 public:
  SoftmaxXent(std::string name, std::size_t classes) : Layer(std::move(name)), classes_(classes) {}

  std::string_view kind() const override { return "softmax_xent"; }
  std::size_t in_size() const override { return classes_; }
  std::size_t out_size() const override { return classes_; }
  double forward_flops() const override { return 4.0 * static_cast<double>(classes_); }

  // n labels in [0, classes), read by forward and backward; the caller keeps them alive.
  void set_labels(const int32_t* labels) { labels_ = labels; }
  float loss() const { return loss_; }

  void forward(const float* in, float* out, int n, bool training) override;
  void backward(const float* in, const float* out, const float* dout, float* din, int n) override;

 private:
  std::size_t classes_;
  const int32_t* labels_ = nullptr;
  float loss_ = 0.0f;
};

}  // namespace psrt::engine
