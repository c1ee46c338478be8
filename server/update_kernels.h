// The element-wise loops of a server's update: the synchronous mean and the optimizers' steps.
// Each is compiled twice on x86-64, for AVX2 and for the baseline, and the loader picks the one
// the CPU runs (GCC target_clones). Neither uses FMA and no sum is reordered, so both give the
// same bits as a scalar loop (tests/server/update_kernels_test.cc).
#pragma once

#include <cstddef>

namespace psrt::kernels {

// out = (in[0] + in[1] + ... + in[W-1]) * (1/W), summed in rank order, in one pass over out.
void mean_into(float* out, const float* const* inputs, std::size_t workers, std::size_t n);

// p -= lr * (g + wd * p)
void sgd(float* p, const float* g, std::size_t n, float lr, float wd);

// d = g + wd * p;  m = momentum * m + d;  p -= lr * m
void sgd_momentum(float* p, const float* g, float* m, std::size_t n, float lr, float wd,
                  float momentum);

struct AdamStep {
  float step_size;  // lr / (1 - b1^t)
  float inv_bias2;  // 1 / sqrt(1 - b2^t)
  float b1, b2, eps, wd;
};
// d = g + wd * p;  m = b1 m + (1 - b1) d;  v = b2 v + (1 - b2) d d;
// p -= step_size * m / (sqrt(v) * inv_bias2 + eps)
void adam(float* p, const float* g, float* m, float* v, std::size_t n, const AdamStep& s);

}  // namespace psrt::kernels
