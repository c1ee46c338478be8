// Flatten: NCHW samples become rows of C*H*W features. The engine's buffers are already one row of
// in_size() floats per sample, so forward and backward are plain copies. No tensors.
#pragma once

#include "engine/layer.h"

namespace psrt::engine {

class Flatten final : public Layer {
 public:
  Flatten(std::string name, std::size_t size) : Layer(std::move(name)), size_(size) {}

  std::string_view kind() const override { return "flatten"; }
  std::size_t in_size() const override { return size_; }
  std::size_t out_size() const override { return size_; }
  double forward_flops() const override { return 0.0; }
  void forward(const float* in, float* out, int n, bool training) override;
  void backward(const float* in, const float* out, const float* dout, float* din, int n) override;

 private:
  std::size_t size_;
};

}  // namespace psrt::engine
