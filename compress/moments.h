// The moments of a gradient chunk that LACO's threshold needs, and that a caller computing them on
// the way (error feedback, while it adds the residual) passes to the codec so it skips a pass.
//
// The sum of squares is taken in one fixed order, which the CPU (cpu_kernels.cc) and the CUDA
// encoder (cuda/lads_kernels.cu) both follow, so that both give the same double bit for bit (and so
// the same RMS, threshold and payload), but for one case: finite values whose fp32 squares
// overflow (|v| > 1.8e19) are summed again in double on the CPU, and still refused on the GPU. With
// n8 = n rounded down to a multiple of 8:
//   block b   = elements [1024 b, min(1024 (b + 1), n8)); its fp32 sum is taken in 8 lanes, lane l
//               summing v*v (product rounded, then sum rounded; no FMA) of elements 8 j + l in
//               order, and then (L0 + L4) + (L1 + L5) and (L2 + L6) + (L3 + L7) added in that
//               order;
//   group g   = blocks [32 g, 32 g + 32): the block sums, as doubles, added in order from 0.0;
//   super s   = groups [64 s, 64 s + 64): the group sums added in order from 0.0;
//   total     = the super sums added in order from 0.0, then double(v) * double(v) of each element
//               in [n8, n), in order.
// (The build without SSE2 takes every element in the last step instead: same value up to the
// last bits.)
#pragma once

#include <cstddef>

namespace psrt::compress {

inline constexpr size_t kMomentLanes = 8;
inline constexpr size_t kMomentBlock = 1024;       // elements
inline constexpr size_t kMomentGroupBlocks = 32;   // blocks per group
inline constexpr size_t kMomentSuperGroups = 64;   // groups per super group

struct ChunkMoments {
  double sum_squares = 0;  // in the order above
  float max_abs = 0;
  bool finite = true;      // false when the chunk holds a NaN or an infinity
};

}  // namespace psrt::compress
