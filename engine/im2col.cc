#include "engine/im2col.h"

#include <algorithm>

namespace psrt::engine {
namespace {

// Output columns [lo, hi) whose input column ow*stride - pad + kj lies inside [0, in_w).
struct ColRange {
  int lo, hi;
};

ColRange valid_cols(const ConvGeom& g, int kj) {
  const int ow_count = g.out_w();
  const int shift = kj - g.pad;  // input column of ow = 0
  // smallest ow with ow*stride + shift >= 0
  int lo = shift >= 0 ? 0 : (-shift + g.stride - 1) / g.stride;
  // smallest ow with ow*stride + shift >= in_w
  int hi = g.in_w - shift <= 0 ? 0 : (g.in_w - shift + g.stride - 1) / g.stride;
  lo = std::min(lo, ow_count);
  hi = std::clamp(hi, lo, ow_count);
  return {lo, hi};
}

}  // namespace

void im2col(const float* img, const ConvGeom& g, float* col) {
  const int oh_count = g.out_h(), ow_count = g.out_w(), k = g.kernel, s = g.stride;
  for (int c = 0; c < g.in_c; ++c) {
    const float* plane = img + static_cast<std::size_t>(c) * g.in_h * g.in_w;
    for (int ki = 0; ki < k; ++ki) {
      for (int kj = 0; kj < k; ++kj) {
        const ColRange r = valid_cols(g, kj);
        const int shift = kj - g.pad;
        for (int oh = 0; oh < oh_count; ++oh) {
          float* dst = col + static_cast<std::size_t>(oh) * ow_count;
          const int ih = oh * s - g.pad + ki;
          if (ih < 0 || ih >= g.in_h) {
            std::fill(dst, dst + ow_count, 0.0f);
            continue;
          }
          const float* row = plane + static_cast<std::size_t>(ih) * g.in_w;
          std::fill(dst, dst + r.lo, 0.0f);
          if (s == 1) {
            const float* from = row + (r.lo + shift);
            float* to = dst + r.lo;
            for (int j = 0; j < r.hi - r.lo; ++j) to[j] = from[j];
          } else {
            for (int ow = r.lo; ow < r.hi; ++ow) dst[ow] = row[ow * s + shift];
          }
          std::fill(dst + r.hi, dst + ow_count, 0.0f);
        }
        col += static_cast<std::size_t>(oh_count) * ow_count;
      }
    }
  }
}

void col2im_add(const float* col, const ConvGeom& g, float* img) {
  const int oh_count = g.out_h(), ow_count = g.out_w(), k = g.kernel, s = g.stride;
  for (int c = 0; c < g.in_c; ++c) {
    float* plane = img + static_cast<std::size_t>(c) * g.in_h * g.in_w;
    for (int ki = 0; ki < k; ++ki) {
      for (int kj = 0; kj < k; ++kj) {
        const ColRange r = valid_cols(g, kj);
        const int shift = kj - g.pad;
        for (int oh = 0; oh < oh_count; ++oh) {
          const int ih = oh * s - g.pad + ki;
          if (ih < 0 || ih >= g.in_h) continue;
          const float* src = col + static_cast<std::size_t>(oh) * ow_count;
          float* row = plane + static_cast<std::size_t>(ih) * g.in_w;
          if (s == 1) {
            float* to = row + (r.lo + shift);
            const float* from = src + r.lo;
            for (int j = 0; j < r.hi - r.lo; ++j) to[j] += from[j];
          } else {
            for (int ow = r.lo; ow < r.hi; ++ow) row[ow * s + shift] += src[ow];
          }
        }
        col += static_cast<std::size_t>(oh_count) * ow_count;
      }
    }
  }
}

}  // namespace psrt::engine
