// Shared by psrt-bench-compress's files: seeded Gaussian gradients, GB/s, and the ResNet-50-like
// tensor list.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace psrt::compress::bench {

inline std::vector<float> gaussian(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

inline double gbps(size_t bytes, double seconds) {
  return static_cast<double>(bytes) / seconds / 1e9;
}

// A ResNet-50-like list of tensors (elements, in forward order), scaled down for --smoke.
inline std::vector<int64_t> model_tensors(bool smoke) {
  std::vector<int64_t> t = {9408, 64};  // conv1 + bn
  const int64_t widths[] = {64, 128, 256, 512};
  const int blocks[] = {3, 4, 6, 3};
  for (int s = 0; s < 4; ++s) {
    const int64_t w = widths[s];
    for (int b = 0; b < blocks[s]; ++b) {
      t.insert(t.end(), {w * 4 * w, w, 9 * w * w, w, w * 4 * w, 4 * w});
    }
  }
  t.insert(t.end(), {2048 * 1000, 1000});  // fc
  if (smoke) {
    for (auto& x : t) x = std::max<int64_t>(1, x / 64);
  }
  return t;
}

// The GPU rows (bench_gpu.cc): LACO's CUDA encode beside a device-to-device copy at 64 KiB,
// 1 MiB, 16 MiB and 256 MiB (64 KiB and 1 MiB with smoke) and on the ResNet-50-like set as one
// batch; "no GPU" where there is none. Returns non-zero on a failure.
int bench_gpu(bool smoke, int reps);

}  // namespace psrt::compress::bench
