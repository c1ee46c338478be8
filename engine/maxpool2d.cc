#include "engine/maxpool2d.h"

#include <algorithm>
#include <bit>
#include <cstdint>

#include "core/status.h"

namespace psrt::engine {
namespace {

// `value` where `keep`, else +0.0f; by bit masking, since GCC turns a ?: on floats into branches,
// and the branches mispredict on data-dependent argmax positions.
inline float keep_or_zero(bool keep, float value) {
  const uint32_t mask = 0u - static_cast<uint32_t>(keep);
  return std::bit_cast<float>(std::bit_cast<uint32_t>(value) & mask);
}

// The common 2x2 stride-2 window, without index arithmetic in the inner loop. Windows do not
// overlap, so backward writes every covered input exactly once (no zero fill, no scatter).
void forward_2x2(const float* x, float* y, int in_w, int oh_count, int ow_count) {
  for (int oh = 0; oh < oh_count; ++oh) {
    const float* r0 = x + static_cast<std::size_t>(2 * oh) * in_w;
    const float* r1 = r0 + in_w;
    float* out = y + static_cast<std::size_t>(oh) * ow_count;
    for (int ow = 0; ow < ow_count; ++ow) {
      out[ow] =
          std::max(std::max(r0[2 * ow], r0[2 * ow + 1]), std::max(r1[2 * ow], r1[2 * ow + 1]));
    }
  }
}

void backward_2x2(const float* x, const float* y, const float* dy, float* dx, int in_h, int in_w,
                  int oh_count, int ow_count) {
  for (int oh = 0; oh < oh_count; ++oh) {
    const std::size_t row = static_cast<std::size_t>(2 * oh) * in_w;
    const float* r0 = x + row;
    const float* r1 = r0 + in_w;
    float* d0 = dx + row;
    float* d1 = d0 + in_w;
    const float* best = y + static_cast<std::size_t>(oh) * ow_count;
    const float* g = dy + static_cast<std::size_t>(oh) * ow_count;
    for (int ow = 0; ow < ow_count; ++ow) {
      // The gradient goes to the first maximum: `left` is g[ow] until a match takes it, then 0.
      // Every value is g[ow] or 0, so the subtractions are exact; selects, no branches.
      const float m = best[ow];
      float left = g[ow];
      const float ga = keep_or_zero(r0[2 * ow] == m, left);
      left -= ga;
      const float gb = keep_or_zero(r0[2 * ow + 1] == m, left);
      left -= gb;
      const float gc = keep_or_zero(r1[2 * ow] == m, left);
      d0[2 * ow] = ga;
      d0[2 * ow + 1] = gb;
      d1[2 * ow] = gc;
      d1[2 * ow + 1] = left - gc;
    }
    if (in_w > 2 * ow_count) d0[in_w - 1] = d1[in_w - 1] = 0.0f;  // odd width: last column
  }
  if (in_h > 2 * oh_count) {  // odd height: last row
    std::fill(dx + static_cast<std::size_t>(in_h - 1) * in_w,
              dx + static_cast<std::size_t>(in_h) * in_w, 0.0f);
  }
}

}  // namespace

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
  const std::size_t in_plane = static_cast<std::size_t>(g_.in_h) * g_.in_w;
  const std::size_t out_plane = static_cast<std::size_t>(oh_count) * ow_count;
  for (std::size_t p = 0; p < planes; ++p) {
    const float* x = in + p * in_plane;
    float* y = out + p * out_plane;
    if (k == 2 && s == 2) {
      forward_2x2(x, y, g_.in_w, oh_count, ow_count);
      continue;
    }
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
  const std::size_t in_plane = static_cast<std::size_t>(g_.in_h) * g_.in_w;
  const std::size_t out_plane = static_cast<std::size_t>(oh_count) * ow_count;
  if (k == 2 && s == 2) {
    for (std::size_t p = 0; p < planes; ++p) {
      backward_2x2(in + p * in_plane, out + p * out_plane, dout + p * out_plane, din + p * in_plane,
                   g_.in_h, g_.in_w, oh_count, ow_count);
    }
    return;
  }
  std::fill(din, din + planes * in_plane, 0.0f);
  for (std::size_t p = 0; p < planes; ++p) {
    const float* x = in + p * in_plane;
    float* dx = din + p * in_plane;
    const float* y = out + p * out_plane;
    const float* dy = dout + p * out_plane;
    for (int oh = 0; oh < oh_count; ++oh) {
      for (int ow = 0; ow < ow_count; ++ow) {
        const std::size_t base = static_cast<std::size_t>(oh * s) * g_.in_w + ow * s;
        const float best = y[oh * ow_count + ow];
        std::size_t at = base;
        for (int i = k - 1; i >= 0; --i) {  // backwards, so the first match wins
          for (int j = k - 1; j >= 0; --j) {
            const std::size_t idx = base + static_cast<std::size_t>(i) * g_.in_w + j;
            at = x[idx] == best ? idx : at;
          }
        }
        dx[at] += dy[oh * ow_count + ow];
      }
    }
  }
}

}  // namespace psrt::engine
