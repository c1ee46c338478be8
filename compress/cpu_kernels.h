// The CPU passes LACO and the baselines are built from: SSE2 (the x86-64 baseline) where
// available, with a portable scalar path that gives the same results (sum of squares in fp32 lanes
// per 1024-element block, summed in double; the lane order differs, so the last bits may too).
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "compress/moments.h"

namespace psrt::compress {

ChunkMoments chunk_moments(std::span<const float> values);

// acc[i] += values[i] (acc.size() == values.size()), returning chunk_moments(acc) of the sums in
// the same pass: error feedback's residual update and LACO's RMS in one read of memory.
ChunkMoments add_and_moments(std::span<float> acc, std::span<const float> values);

// Momentum correction's step fused into the same pass: u[i] = mu * u[i] + values[i], then
// acc[i] += u[i] (each a rounded fp32 product and sums, no FMA), returning chunk_moments(acc).
ChunkMoments momentum_add_and_moments(std::span<float> momentum, float mu, std::span<float> acc,
                                      std::span<const float> values);

// One step of Adam on the worker (error_feedback.h's Adam correction), in fp32 as the servers'
// Adam computes it: m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g*g; d = c1*m / (sqrt(v)*c2 + eps)
// with the bias corrections c1 = 1/(1-b1^t), c2 = 1/sqrt(1-b2^t); then acc += d. Returns
// chunk_moments(acc). With workers W > 1 the second moment is the estimate of the global batch's
// (W local batches' mean) from the local one: with mh = c1*m, vh = c2*c2*v and
// q = min(mh*mh, vh) standing for the squared mean, v_global = q + (vh - q) / W (the variance
// part shrinks by W) and d = mh / (sqrt(v_global) + eps).
struct AdamStep {
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
  float c1 = 1, c2 = 1;
  float inv_workers = 1;  // 1 / W
  float cap = std::numeric_limits<float>::infinity();  // the residual is clamped to [-cap, cap]
};
AdamStep adam_step(double beta1, double beta2, double eps, uint64_t t, int workers = 1);
ChunkMoments adam_add_and_moments(std::span<float> m, std::span<float> v, const AdamStep& a,
                                  std::span<float> acc, std::span<const float> values);

// key[i] = acc[i] * (the denominator adam_add_and_moments divided m by at step a), returning
// chunk_moments(key): the residual of Adam's direction in the gradient's units.
ChunkMoments adam_gradient_key(std::span<const float> m, std::span<const float> v,
                               const AdamStep& a, std::span<const float> acc, std::span<float> key);

// Appends to `indices` (cleared first) every i with |values[i]| >= threshold, in order.
void select_at_least(std::span<const float> values, float threshold,
                     std::vector<uint32_t>& indices);

// select_at_least, plus codes[j] = LogCodebook::encode(values[indices[j]], t) for each kept
// element, in the same pass (t: the chunk's log8 thresholds; threshold >= t[0]).
void select_and_code(std::span<const float> values, float threshold, const float* t,
                     std::vector<uint32_t>& indices, std::vector<uint8_t>& codes);

// Sum of |values|, in double.
double sum_abs(std::span<const float> values);

}  // namespace psrt::compress
