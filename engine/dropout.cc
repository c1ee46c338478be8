#include "engine/dropout.h"

#include <algorithm>

#include "core/status.h"
#include "engine/dropout_mask.h"
#include "engine/init.h"

namespace psrt::engine {

uint64_t dropout_step_seed(uint64_t seed, uint64_t step) {
  return mix_seed(seed, step);
}

Dropout::Dropout(std::string name, std::size_t size, float p)
    : Layer(std::move(name)),
      size_(size),
      p_(p),
      scale_(p < 1.0f ? 1.0f / (1.0f - p) : 0.0f),
      threshold_(dropout_threshold(p)) {
  if (!(p >= 0.0f && p < 1.0f)) {
    throw ConfigError("dropout " + this->name() + ": p = " + std::to_string(p) +
                      " (must be in [0, 1))");
  }
  reseed(0);
}

void Dropout::reseed(uint64_t seed) {
  seed_ = seed;
  next_step_ = 0;
  step_seed_ = dropout_step_seed(seed_, 0);
}

void Dropout::forward(const float* in, float* out, int n, bool training) {
  const std::size_t count = static_cast<std::size_t>(std::max(n, 0)) * size_;
  if (!training || p_ == 0.0f) {
    std::copy(in, in + count, out);
    return;
  }
  step_seed_ = dropout_step_seed(seed_, next_step_++);
  for (std::size_t i = 0; i < count; ++i) {
    out[i] = dropout_keeps(step_seed_, i, threshold_) ? in[i] * scale_ : 0.0f;
  }
}

void Dropout::backward(const float* /*in*/, const float* /*out*/, const float* dout, float* din,
                       int n) {
  if (din == nullptr) return;
  const std::size_t count = static_cast<std::size_t>(std::max(n, 0)) * size_;
  if (p_ == 0.0f) {
    std::copy(dout, dout + count, din);
    return;
  }
  for (std::size_t i = 0; i < count; ++i) {
    din[i] = dropout_keeps(step_seed_, i, threshold_) ? dout[i] * scale_ : 0.0f;
  }
}

}  // namespace psrt::engine
