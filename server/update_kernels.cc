#include "server/update_kernels.h"

#include <algorithm>
#include <cmath>

#include "core/simd_clones.h"  // two versions of each loop where the compiler can make them

namespace psrt::kernels {

PSRT_SIMD_CLONES
void mean_into(float* out, const float* const* inputs, std::size_t workers, std::size_t n) {
  if (workers == 0) return;
  const float scale = 1.0f / float(workers);
  // Blocks that stay in L1 while every worker's slice is added: one pass over `out`, not W + 1.
  constexpr std::size_t kBlock = 2048;
  for (std::size_t start = 0; start < n; start += kBlock) {
    const std::size_t len = std::min(kBlock, n - start);
    float* __restrict o = out + start;
    const float* __restrict first = inputs[0] + start;
    for (std::size_t i = 0; i < len; ++i) o[i] = first[i];
    for (std::size_t w = 1; w < workers; ++w) {
      const float* __restrict in = inputs[w] + start;
      for (std::size_t i = 0; i < len; ++i) o[i] += in[i];
    }
    for (std::size_t i = 0; i < len; ++i) o[i] *= scale;
  }
}

PSRT_SIMD_CLONES
void sgd(float* __restrict p, const float* __restrict g, std::size_t n, float lr, float wd) {
  for (std::size_t i = 0; i < n; ++i) p[i] -= lr * (g[i] + wd * p[i]);
}

PSRT_SIMD_CLONES
void sgd_momentum(float* __restrict p, const float* __restrict g, float* __restrict m,
                  std::size_t n, float lr, float wd, float momentum) {
  for (std::size_t i = 0; i < n; ++i) {
    const float d = g[i] + wd * p[i];
    m[i] = momentum * m[i] + d;
    p[i] -= lr * m[i];
  }
}

PSRT_SIMD_CLONES
void adam(float* __restrict p, const float* __restrict g, float* __restrict m,
          float* __restrict v, std::size_t n, const AdamStep& s) {
  const float b1 = s.b1, b2 = s.b2, step = s.step_size, inv = s.inv_bias2, eps = s.eps, wd = s.wd;
  for (std::size_t i = 0; i < n; ++i) {
    const float d = g[i] + wd * p[i];
    m[i] = b1 * m[i] + (1.0f - b1) * d;
    v[i] = b2 * v[i] + (1.0f - b2) * d * d;
    p[i] -= step * m[i] / (std::sqrt(v[i]) * inv + eps);
  }
}

}  // namespace psrt::kernels
