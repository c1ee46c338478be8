// Double-precision references for the convolution and pooling layers: direct loops, no im2col.
#pragma once

#include <algorithm>

#include "tests/engine/reference.h"

namespace psrt::engine::testing {

struct ConvShape {
  int n, c, h, w, oc, k, stride, pad;
  int oh() const { return (h + 2 * pad - k) / stride + 1; }
  int ow() const { return (w + 2 * pad - k) / stride + 1; }
};

// y[n, oc, oh, ow] = b[oc] + sum_{c, i, j} w[oc, c, i, j] * x[n, c, oh*s - p + i, ow*s - p + j]
inline Vec conv2d_ref(const Vec& x, const Vec& w, const Vec& b, const ConvShape& s) {
  const int oh = s.oh(), ow = s.ow();
  Vec y(static_cast<std::size_t>(s.n * s.oc * oh * ow));
  for (int n = 0; n < s.n; ++n)
    for (int o = 0; o < s.oc; ++o)
      for (int r = 0; r < oh; ++r)
        for (int q = 0; q < ow; ++q) {
          double acc = b[o];
          for (int c = 0; c < s.c; ++c)
            for (int i = 0; i < s.k; ++i)
              for (int j = 0; j < s.k; ++j) {
                const int ih = r * s.stride - s.pad + i, iw = q * s.stride - s.pad + j;
                if (ih < 0 || ih >= s.h || iw < 0 || iw >= s.w) continue;
                acc += w[((o * s.c + c) * s.k + i) * s.k + j] *
                       x[((n * s.c + c) * s.h + ih) * s.w + iw];
              }
          y[((n * s.oc + o) * oh + r) * ow + q] = acc;
        }
  return y;
}

// Max pooling with a k x k window and step `stride`, floor mode.
inline Vec maxpool_ref(const Vec& x, int n, int c, int h, int w, int k, int stride) {
  const int oh = (h - k) / stride + 1, ow = (w - k) / stride + 1;
  Vec y(static_cast<std::size_t>(n * c * oh * ow));
  for (int p = 0; p < n * c; ++p)
    for (int r = 0; r < oh; ++r)
      for (int q = 0; q < ow; ++q) {
        double best = x[(p * h + r * stride) * w + q * stride];
        for (int i = 0; i < k; ++i)
          for (int j = 0; j < k; ++j)
            best = std::max(best, x[(p * h + r * stride + i) * w + q * stride + j]);
        y[(p * oh + r) * ow + q] = best;
      }
  return y;
}

// sum(r .* y): the scalar whose gradient a layer's backward computes for upstream gradient r.
inline double dot(const Vec& r, const Vec& y) {
  double s = 0;
  for (std::size_t i = 0; i < y.size(); ++i) s += r[i] * y[i];
  return s;
}

}  // namespace psrt::engine::testing
