#include "engine/softmax_xent.h"

#include <algorithm>
#include <cmath>

namespace psrt::engine {

void SoftmaxXent::forward(const float* in, float* out, int n, bool /*training*/) {
  double total = 0.0;
  for (int r = 0; r < n; ++r) {
    const float* z = in + static_cast<std::size_t>(r) * classes_;
    float* p = out + static_cast<std::size_t>(r) * classes_;
    const float zmax = *std::max_element(z, z + classes_);
    double sum = 0.0;
    for (std::size_t c = 0; c < classes_; ++c) sum += std::exp(static_cast<double>(z[c] - zmax));
    const double log_sum = std::log(sum);
    for (std::size_t c = 0; c < classes_; ++c) {
      p[c] = static_cast<float>(std::exp(static_cast<double>(z[c] - zmax) - log_sum));
    }
    if (labels_ != nullptr) {
      const auto y = static_cast<std::size_t>(labels_[r]);
      total += log_sum - static_cast<double>(z[y] - zmax);  // -log p_y
    }
  }
  loss_ = n > 0 ? static_cast<float>(total / n) : 0.0f;
}

void SoftmaxXent::backward(const float* /*in*/, const float* out, const float* /*dout*/, float* din,
                           int n) {
  if (din == nullptr || n <= 0) return;
  const float scale = 1.0f / static_cast<float>(n);
  for (int r = 0; r < n; ++r) {
    const std::size_t base = static_cast<std::size_t>(r) * classes_;
    for (std::size_t c = 0; c < classes_; ++c) din[base + c] = out[base + c] * scale;
    din[base + static_cast<std::size_t>(labels_[r])] -= scale;
  }
}

}  // namespace psrt::engine
