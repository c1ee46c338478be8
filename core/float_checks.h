// Checks over float arrays on the hot path of every dense push.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace psrt {

// How many of `v` are NaN or infinite. The test is on the bits (exponent all ones) and counts
// into 32-bit lanes, which the compiler vectorises to four instructions per four floats with
// SSE2; std::isfinite (or a 64-bit count) costs about three per float (callgrind, 4 KB chunks).
inline std::size_t count_non_finite(std::span<const float> v) {
  constexpr std::size_t kBlock = std::size_t{1} << 30;  // a 32-bit count cannot overflow
  std::size_t bad = 0;
  for (std::size_t start = 0; start < v.size(); start += kBlock) {
    const float* p = v.data() + start;
    const std::size_t n = std::min(kBlock, v.size() - start);
    uint32_t block_bad = 0;
    for (std::size_t i = 0; i < n; ++i) {
      uint32_t bits;
      std::memcpy(&bits, p + i, sizeof bits);
      block_bad += (bits & 0x7f800000u) == 0x7f800000u ? 1u : 0u;
    }
    bad += block_bad;
  }
  return bad;
}

}  // namespace psrt
