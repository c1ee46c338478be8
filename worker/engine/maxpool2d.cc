#include "worker/engine/maxpool2d.h"

#include <algorithm>

#include "core/status.h"

namespace psrt::engine {

MaxPool2d::MaxPool2d(std::string name, const PoolGeom& geom) : Layer(std::move(name)), g_(geom) {
  if (!g_.valid()) {
    throw ConfigError("maxpool2d " + this->name() + ": bad geometry (in " +
                      std::to_string(g_.channels) + "x" + std::to_string(g_.in_h) + "x" +
                      std::to_string(g_.in_w) + ", kernel " + std::to_string(g_.kernel) +
                      ", stride " + std::to_string(g_.stride) + ")");
  }
}

std::size_t MaxPool2d::in_size() const {
  return static_cast<std::size_t>(g_.channels) * g_.in_h * g_.in_w;
}

std::size_t MaxPool2d::out_size() const {
  return static_cast<std::size_t>(g_.channels) * g_.out_h() * g_.out_w();
}

double MaxPool2d::forward_flops() const {
  return static_cast<double>(out_size()) * g_.kernel * g_.kernel;
}

void MaxPool2d::forward(const float* in, float* out, int n, bool /*training*/) {
  const int oh_count = g_.out_h(), ow_count = g_.out_w(), k = g_.kernel, s = g_.stride;
  const std::size_t planes = static_cast<std::size_t>(std::max(n, 0)) * g_.channels;
  for (std::size_t p = 0; p < planes; ++p) {
    const float* x = in + p * g_.in_h * g_.in_w;
    float* y = out + p * oh_count * ow_count;
    for (int oh = 0; oh < oh_count; ++oh) {
      for (int ow = 0; ow < ow_count; ++ow) {
        const float* win = x + static_cast<std::size_t>(oh * s) * g_.in_w + ow * s;
        float best = win[0];
        for (int i = 0; i < k; ++i) {
          for (int j = 0; j < k; ++j) best = std::max(best, win[i * g_.in_w + j]);
        }
        y[oh * ow_count + ow] = best;
      }
    }
  }
}

void MaxPool2d::backward(const float* in, const float* out, const float* dout, float* din, int n) {
  if (din == nullptr) return;
  const int oh_count = g_.out_h(), ow_count = g_.out_w(), k = g_.kernel, s = g_.stride;
  const std::size_t planes = static_cast<std::size_t>(std::max(n, 0)) * g_.channels;
  std::fill(din, din + planes * g_.in_h * g_.in_w, 0.0f);
  for (std::size_t p = 0; p < planes; ++p) {
    const float* x = in + p * g_.in_h * g_.in_w;
    float* dx = din + p * g_.in_h * g_.in_w;
    const float* y = out + p * oh_count * ow_count;
    const float* dy = dout + p * oh_count * ow_count;
    for (int oh = 0; oh < oh_count; ++oh) {
      for (int ow = 0; ow < ow_count; ++ow) {
        const std::size_t base = static_cast<std::size_t>(oh * s) * g_.in_w + ow * s;
        const float best = y[oh * ow_count + ow];
        std::size_t at = base;
        for (int i = k * k - 1; i >= 0; --i) {  // backwards, so the first match wins
          const std::size_t idx = base + static_cast<std::size_t>(i / k) * g_.in_w + i % k;
          if (x[idx] == best) at = idx;
        }
        dx[at] += dy[oh * ow_count + ow];
      }
    }
  }
}

}  // namespace psrt::engine
