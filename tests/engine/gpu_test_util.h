// Shared by the [gpu] engine tests: the device check that skips a test where there is none, and
// seeded batches, well-conditioned for a CPU/GPU comparison (relu_margin.h).
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <vector>

#include "engine/cuda/device_buffer.h"
#include "engine/network.h"
#include "tests/engine/reference.h"
#include "tests/engine/relu_margin.h"

namespace psrt::engine::testing {

// The phrase ctest's SKIP_REGULAR_EXPRESSION for the `gpu` label looks for (tests/CMakeLists.txt):
// a test that finds no device reports itself skipped, never passed.
inline bool have_gpu() {
  if (cuda::device_count() > 0) return true;
  WARN("no CUDA device (cudaGetDeviceCount failed or returned 0): [gpu] test skipped");
  return false;
}

struct Batch {
  int n = 0;
  std::vector<float> images;
  std::vector<int32_t> labels;
};

// Pixels in [0, 1) and labels in [0, classes), seeded.
inline Batch make_batch(std::size_t input, int classes, int n, uint64_t seed) {
  std::mt19937_64 gen(seed);
  Batch b;
  b.n = n;
  b.images = to_float(random_vec(input * static_cast<std::size_t>(n), gen, 0.0, 1.0));
  for (int r = 0; r < n; ++r) b.labels.push_back(static_cast<int32_t>(gen() % classes));
  return b;
}

// make_batch(seed), or if some ReLU input of `cpu` (built from spec and net_seed, with its current
// parameters) comes within kReluMargin of zero for it, the next of seed + 1000, seed + 2000, ...
// that does not: deterministic, and computed on the CPU alone.
inline Batch conditioned_batch(const NetSpec& spec, uint64_t net_seed, const Network& cpu, int n,
                               uint64_t seed) {
  for (int attempt = 0; attempt < 50; ++attempt, seed += 1000) {
    Batch b = make_batch(cpu.input_size(), cpu.classes(), n, seed);
    if (relu_margin(spec, net_seed, cpu, b.images, n) >= kReluMargin) return b;
  }
  FAIL("no well-conditioned batch in 50 seeds");
  return {};
}

}  // namespace psrt::engine::testing
