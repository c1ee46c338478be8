#include "core/float_checks.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/simd_clones.h"

namespace psrt {

namespace {

// The test is on the bits and counts into 32-bit lanes, which the compiler vectorises (memcpy
// keeps any alignment legal): about 1.9 instructions per float with SSE2, 0.9 with AVX2
// (callgrind, 4 KB chunks); std::isfinite or a 64-bit count cost about three.
PSRT_SIMD_CLONES
uint32_t count_block(const float* p, std::size_t n) {
  uint32_t bad = 0;
  for (std::size_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, p + i, sizeof bits);
    bad += (bits & 0x7f800000u) == 0x7f800000u ? 1u : 0u;
  }
  return bad;
}

}  // namespace

std::size_t count_non_finite(std::span<const float> v) {
  constexpr std::size_t kBlock = std::size_t{1} << 30;  // a 32-bit count cannot overflow
  std::size_t bad = 0;
  for (std::size_t start = 0; start < v.size(); start += kBlock) {
    bad += count_block(v.data() + start, std::min(kBlock, v.size() - start));
  }
  return bad;
}

}  // namespace psrt
