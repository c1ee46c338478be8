#include "compress/cpu_kernels.h"

#include "compress/log_quant.h"

#include <algorithm>
#include <bit>
#include <cmath>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace psrt::compress {

namespace {

constexpr size_t kLanes = kMomentLanes;
constexpr size_t kBlock = kMomentBlock;

#if defined(__SSE2__)
inline __m128 abs4(__m128 v) { return _mm_and_ps(v, _mm_castsi128_ps(_mm_set1_epi32(0x7fffffff))); }
inline float hmax(__m128 v) {
  alignas(16) float f[4];
  _mm_store_ps(f, v);
  return std::max(std::max(f[0], f[1]), std::max(f[2], f[3]));
}
inline float hsum(__m128 v) {
  alignas(16) float f[4];
  _mm_store_ps(f, v);
  return (f[0] + f[1]) + (f[2] + f[3]);
}
#endif

}  // namespace

namespace {

// One pass computing the moments of v[i] = src[i] (kRead), of v[i] = acc[i] + src[i] stored back
// to acc (kAdd), or, with u[i] = mu * u[i] + src[i] stored back to u first, of v[i] = acc[i] +
// u[i] stored back to acc (kMomentum). The lane and block order is the same in every mode, so the
// moments are bit for bit those chunk_moments gives of the final v.
enum class Pass { kRead, kAdd, kMomentum };

// Finite values whose squares overflow the float lanes below (|v| > 1.8e19, a diverging run)
// were reported as a NaN or an infinity: summed again in double, once, on that rare path. (The
// CUDA encoder's first pass, which compress/moments.h keeps bit-equal to this one, does not:
// there such a chunk is still refused.)
double sum_squares_in_double(const float* values, size_t n) {
  double sum = 0;
  for (size_t k = 0; k < n; ++k) sum += double{values[k]} * values[k];
  return sum;
}

template <Pass kMode>
ChunkMoments moments_pass(float* acc, const float* src, size_t n, float* u = nullptr,
                          float mu = 0) {
  ChunkMoments m;
  size_t i = 0;
  auto value = [&](size_t k) {
    if constexpr (kMode == Pass::kMomentum) {
      u[k] = mu * u[k] + src[k];
      acc[k] += u[k];
      return acc[k];
    } else if constexpr (kMode == Pass::kAdd) {
      acc[k] += src[k];
      return acc[k];
    } else {
      return src[k];
    }
  };
#if defined(__SSE2__)
  const __m128 mu4 = _mm_set1_ps(mu);
  auto load = [&](size_t k) {
    if constexpr (kMode == Pass::kMomentum) {
      const __m128 w = _mm_add_ps(_mm_mul_ps(mu4, _mm_loadu_ps(u + k)), _mm_loadu_ps(src + k));
      _mm_storeu_ps(u + k, w);
      const __m128 v = _mm_add_ps(_mm_loadu_ps(acc + k), w);
      _mm_storeu_ps(acc + k, v);
      return v;
    } else if constexpr (kMode == Pass::kAdd) {
      const __m128 v = _mm_add_ps(_mm_loadu_ps(acc + k), _mm_loadu_ps(src + k));
      _mm_storeu_ps(acc + k, v);
      return v;
    } else {
      (void)mu4;
      return _mm_loadu_ps(src + k);
    }
  };
  __m128 mx0 = _mm_setzero_ps(), mx1 = _mm_setzero_ps();
  __m128 bad = _mm_setzero_ps();  // NaN lanes compare unordered
  // Block sums into groups, groups into super groups, super groups into the total (moments.h).
  double group = 0, super = 0;
  size_t blocks = 0, groups = 0;
  while (i + kLanes <= n) {
    __m128 acc0 = _mm_setzero_ps(), acc1 = _mm_setzero_ps();
    const size_t end = std::min(n - (n - i) % kLanes, i + kBlock);
    for (; i < end; i += kLanes) {
      const __m128 a = load(i);
      const __m128 b = load(i + 4);
      acc0 = _mm_add_ps(acc0, _mm_mul_ps(a, a));
      acc1 = _mm_add_ps(acc1, _mm_mul_ps(b, b));
      mx0 = _mm_max_ps(mx0, abs4(a));
      mx1 = _mm_max_ps(mx1, abs4(b));
      bad = _mm_or_ps(bad, _mm_cmpunord_ps(a, b));
    }
    group += hsum(_mm_add_ps(acc0, acc1));
    if (++blocks == kMomentGroupBlocks) {
      super += group;
      group = 0;
      blocks = 0;
      if (++groups == kMomentSuperGroups) {
        m.sum_squares += super;
        super = 0;
        groups = 0;
      }
    }
  }
  if (blocks > 0) {
    super += group;
    ++groups;
  }
  if (groups > 0) m.sum_squares += super;
  m.max_abs = hmax(_mm_max_ps(mx0, mx1));
  if (_mm_movemask_ps(bad) != 0) m.sum_squares = NAN;
#endif
  for (; i < n; ++i) {
    const float v = value(i);
    m.sum_squares += double{v} * v;
    m.max_abs = std::max(m.max_abs, std::fabs(v));
  }
  if (std::isinf(m.sum_squares) && std::isfinite(m.max_abs)) {
    m.sum_squares = sum_squares_in_double(kMode == Pass::kRead ? src : acc, n);
  }
  m.finite = std::isfinite(m.sum_squares);
  return m;
}

}  // namespace

ChunkMoments chunk_moments(std::span<const float> values) {
  return moments_pass<Pass::kRead>(nullptr, values.data(), values.size());
}

ChunkMoments add_and_moments(std::span<float> acc, std::span<const float> values) {
  return moments_pass<Pass::kAdd>(acc.data(), values.data(), std::min(acc.size(), values.size()));
}

ChunkMoments momentum_add_and_moments(std::span<float> momentum, float mu, std::span<float> acc,
                                      std::span<const float> values) {
  const size_t n = std::min({momentum.size(), acc.size(), values.size()});
  return moments_pass<Pass::kMomentum>(acc.data(), values.data(), n, momentum.data(), mu);
}

AdamStep adam_step(double beta1, double beta2, double eps, uint64_t t, int workers) {
  AdamStep a;
  a.inv_workers = workers > 1 ? float(1.0 / workers) : 1.0f;
  a.beta1 = float(beta1);
  a.beta2 = float(beta2);
  a.eps = float(eps);
  a.c1 = float(1.0 / (1.0 - std::pow(beta1, double(t))));
  a.c2 = float(1.0 / std::sqrt(1.0 - std::pow(beta2, double(t))));
  return a;
}

namespace {
// Adam's denominator with the global batch's second moment, for the bias-corrected moments mh and
// vh: the squared mean q = min(mh^2, vh) counts whole, the rest of vh divided by W. Adam's
// direction (adam_add_and_moments) and LACO's selection key (adam_gradient_key) share it.
inline float adam_global_denominator(float mh, float vh, const AdamStep& a) {
  const float q = std::min(mh * mh, vh);
  return std::sqrt(q + (vh - q) * a.inv_workers) + a.eps;
}
}  // namespace

ChunkMoments adam_add_and_moments(std::span<float> m, std::span<float> v, const AdamStep& a,
                                  std::span<float> acc, std::span<const float> values) {
  const size_t n = std::min({m.size(), v.size(), acc.size(), values.size()});
  const float b1 = a.beta1, b2 = a.beta2, nb1 = 1.0f - b1, nb2 = 1.0f - b2;
  float* mp = m.data();
  float* vp = v.data();
  float* r = acc.data();
  const float* g = values.data();
  if (a.inv_workers == 1.0f) {
    for (size_t i = 0; i < n; ++i) {
      mp[i] = b1 * mp[i] + nb1 * g[i];
      vp[i] = b2 * vp[i] + nb2 * g[i] * g[i];
      r[i] = std::clamp(r[i] + a.c1 * mp[i] / (std::sqrt(vp[i]) * a.c2 + a.eps), -a.cap, a.cap);
    }
  } else {
    const float c2sq = a.c2 * a.c2;
    for (size_t i = 0; i < n; ++i) {
      mp[i] = b1 * mp[i] + nb1 * g[i];
      vp[i] = b2 * vp[i] + nb2 * g[i] * g[i];
      const float mh = a.c1 * mp[i];
      r[i] = std::clamp(r[i] + mh / adam_global_denominator(mh, vp[i] * c2sq, a), -a.cap, a.cap);
    }
  }
  return chunk_moments(std::span<const float>(r, n));
}

ChunkMoments adam_gradient_key(std::span<const float> m, std::span<const float> v,
                               const AdamStep& a, std::span<const float> acc,
                               std::span<float> key) {
  const size_t n = std::min({m.size(), v.size(), acc.size(), key.size()});
  const float c2sq = a.c2 * a.c2;
  for (size_t i = 0; i < n; ++i) {
    key[i] = acc[i] * adam_global_denominator(a.c1 * m[i], v[i] * c2sq, a);
  }
  return chunk_moments(std::span<const float>(key.data(), n));
}

namespace {

// Calls on_hit(i) for every i with |values[i]| >= threshold, in order. The SSE2 path compares 16
// elements at a time and visits only the set bits of the mask; on_hit runs while the element's
// cache line is still hot (select_and_code quantizes there).
template <typename OnHit>
inline void for_each_at_least(std::span<const float> values, float threshold, OnHit&& on_hit) {
  const float* g = values.data();
  const size_t n = values.size();
  size_t i = 0;
#if defined(__SSE2__)
  const __m128 t = _mm_set1_ps(threshold);
  for (; i + 16 <= n; i += 16) {
    const int m0 = _mm_movemask_ps(_mm_cmpge_ps(abs4(_mm_loadu_ps(g + i)), t));
    const int m1 = _mm_movemask_ps(_mm_cmpge_ps(abs4(_mm_loadu_ps(g + i + 4)), t));
    const int m2 = _mm_movemask_ps(_mm_cmpge_ps(abs4(_mm_loadu_ps(g + i + 8)), t));
    const int m3 = _mm_movemask_ps(_mm_cmpge_ps(abs4(_mm_loadu_ps(g + i + 12)), t));
    auto mask = static_cast<uint32_t>(m0 | (m1 << 4) | (m2 << 8) | (m3 << 12));
    while (mask != 0) {
      on_hit(i + static_cast<size_t>(std::countr_zero(mask)));
      mask &= mask - 1;
    }
  }
#endif
  for (; i < n; ++i) {
    if (std::fabs(g[i]) >= threshold) on_hit(i);
  }
}

}  // namespace

void select_at_least(std::span<const float> values, float threshold,
                     std::vector<uint32_t>& indices) {
  indices.clear();
  for_each_at_least(values, threshold,
                    [&](size_t i) { indices.push_back(static_cast<uint32_t>(i)); });
}

void select_and_code(std::span<const float> values, float threshold, const float* t,
                     std::vector<uint32_t>& indices, std::vector<uint8_t>& codes) {
  indices.clear();
  codes.clear();
  const float* g = values.data();
  for_each_at_least(values, threshold, [&](size_t i) {
    indices.push_back(static_cast<uint32_t>(i));
    codes.push_back(LogCodebook::encode(g[i], t));
  });
}

double sum_abs(std::span<const float> values) {
  double total = 0;
  const float* g = values.data();
  const size_t n = values.size();
  size_t i = 0;
  while (i + kLanes <= n) {
    float acc[kLanes] = {};
    const size_t end = std::min(n - (n - i) % kLanes, i + kBlock);
    for (; i < end; i += kLanes) {
      for (size_t j = 0; j < kLanes; ++j) acc[j] += std::fabs(g[i + j]);
    }
    float block = 0;
    for (size_t j = 0; j < kLanes; ++j) block += acc[j];
    total += block;
  }
  for (; i < n; ++i) total += std::fabs(g[i]);
  return total;
}

}  // namespace psrt::compress
