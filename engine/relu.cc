#include "engine/relu.h"

namespace psrt::engine {

void Relu::forward(const float* in, float* out, int n, bool /*training*/) {
  const std::size_t count = static_cast<std::size_t>(n > 0 ? n : 0) * size_;
  for (std::size_t i = 0; i < count; ++i) out[i] = in[i] > 0.0f ? in[i] : 0.0f;
}

void Relu::backward(const float* /*in*/, const float* out, const float* dout, float* din, int n) {
  if (din == nullptr) return;
  const std::size_t count = static_cast<std::size_t>(n > 0 ? n : 0) * size_;
  // Both loads unconditional, so the select vectorises instead of branching on a random sign.
  for (std::size_t i = 0; i < count; ++i) {
    const float g = dout[i];
    din[i] = out[i] > 0.0f ? g : 0.0f;
  }
}

}  // namespace psrt::engine
