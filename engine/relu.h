// Rectified linear unit, elementwise: y = max(x, 0). No tensors.
#pragma once

#include "engine/layer.h"

namespace psrt::engine {

class Relu final : public Layer {
 public:
  Relu(std::string name, std::size_t size) : Layer(std::move(name)), size_(size) {}

  std::string_view kind() const override { return "relu"; }
  std::size_t in_size() const override { return size_; }
  std::size_t out_size() const override { return size_; }
  double forward_flops() const override { return static_cast<double>(size_); }
  void forward(const float* in, float* out, int n, bool training) override;
  // The gradient passes where the output is positive (at x == 0 it is taken as 0).
  void backward(const float* in, const float* out, const float* dout, float* din, int n) override;

 private:
  std::size_t size_;
};

}  // namespace psrt::engine
