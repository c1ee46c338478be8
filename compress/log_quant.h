// 8-bit logarithmic quantization: sign bit plus a 7-bit code c of log2(|v| / scale) over a dynamic
// range of R octaves (R integer, 1..64), scale = the chunk's largest kept |v| (fp32).
//
//   decoded |v| = scale * m[c],  m[c] = 2^((c - 127) * R / 127)    (m[127] = 1: the max is exact)
//   code c      = the largest c with |v| >= scale * b[c]
//   b[c]        = 2^((c - 127.5) * R / 127) for c >= 1 (geometric midpoints between m[c-1], m[c])
//   b[0]        = 2^(-R - R / 254): values below scale * b[0] are not representable; the codec
//                 leaves them unsent (in the residual).
//
// Error bound: |decoded - v| <= (2^(R/254) - 1) * |v| (plus fp32 rounding of m, b and the product,
// a few ulp), the sign is exact. R = 12 gives 3.3%. The tables are computed once in double and
// rounded to float, and code selection is comparisons of float products only, so the CPU and the
// CUDA path choose bit-identical codes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace psrt::compress {

inline constexpr int kLogLevels = 128;

class LogCodebook {
 public:
  explicit LogCodebook(int range);

  int range() const { return range_; }
  // Relative magnitude of 7-bit code c.
  float magnitude(unsigned code7) const { return magnitude_[code7 & 0x7fu]; }
  const std::array<float, kLogLevels>& relative_bounds() const { return bound_; }
  const std::array<float, kLogLevels>& magnitudes() const { return magnitude_; }

  // Absolute thresholds t[c] = scale * b[c] for one chunk.
  void thresholds(float scale, float* t) const {
    for (int c = 0; c < kLogLevels; ++c) t[c] = scale * bound_[c];
  }
  // Code byte for v given the chunk's thresholds; requires |v| >= t[0].
  static uint8_t encode(float v, const float* t) {
    const float a = v < 0.0f ? -v : v;
    unsigned c = 0;
    // Binary search; c + step never passes 127 (64 + 32 + ... + 1 = 127).
    for (unsigned step = 64; step != 0; step >>= 1) c += (a >= t[c + step]) ? step : 0;
    return static_cast<uint8_t>(c | (v < 0.0f ? 0x80u : 0u));
  }
  float decode(uint8_t code, float scale) const {
    const float m = scale * magnitude_[code & 0x7fu];
    return (code & 0x80u) ? -m : m;
  }
  // The relative error bound 2^(R/254) - 1.
  double error_bound() const;

 private:
  int range_;
  std::array<float, kLogLevels> bound_{};
  std::array<float, kLogLevels> magnitude_{};
};

// Codebooks for every range 1..64, built once per codec.
class LogCodebooks {
 public:
  LogCodebooks();
  const LogCodebook& get(int range) const { return books_[static_cast<size_t>(range - 1)]; }

 private:
  std::vector<LogCodebook> books_;
};

}  // namespace psrt::compress
