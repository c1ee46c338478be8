// The dropout mask as a pure function of (step seed, element index): a counter-based hash, so the
// mask needs no storage, backward recomputes exactly what forward drew, and a CUDA kernel can
// draw the same mask as the CPU. No CUDA headers: the functions are host/device under nvcc.
#pragma once

#include <cstdint>

#include "core/host_device.h"

namespace psrt::engine {

// splitmix64 finaliser of seed and index.
PSRT_HOST_DEVICE inline uint64_t dropout_hash(uint64_t step_seed, uint64_t index) {
  uint64_t z = step_seed + 0x9E3779B97F4A7C15ULL * (index + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// Drop threshold for probability p in [0, 1): an element is kept when its 24-bit draw >= it.
PSRT_HOST_DEVICE inline uint32_t dropout_threshold(float p) {
  return static_cast<uint32_t>(static_cast<double>(p) * 16777216.0);
}

PSRT_HOST_DEVICE inline bool dropout_keeps(uint64_t step_seed, uint64_t index, uint32_t threshold) {
  return static_cast<uint32_t>(dropout_hash(step_seed, index) >> 40) >= threshold;
}

}  // namespace psrt::engine
