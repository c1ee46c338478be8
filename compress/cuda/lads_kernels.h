// Internal to compress/cuda (CUDA code only): LADS as three kernels over a batch of segments (one
// chunk each), in one fixed launch sequence, whatever the batch holds:
//
//   1. moments      one read of every chunk (and, for error feedback, x += g or u = mu u + g,
//                   x += u in the same pass): the sum of squares in the order of moments.h, the
//                   max |x|; the last block of each chunk finishes its sums and derives the RMS,
//                   the threshold tau and the 128 log8 thresholds, as lads_encode does on the CPU.
//   2. select_pack  one read of every chunk: |x| >= tau selects, the log8 code (or fp32 value) is
//                   taken, and each kept element's index (delta varint), code and position are
//                   written in index order, through a decoupled look-back over 4096-element
//                   tiles; the bitmap too (warp words). Deterministic: the output does not depend
//                   on which block ran first.
//   3. assemble     per chunk, the smaller index section (varint or bitmap), the values and the
//                   scale, written straight into mapped pinned host memory: the only copy to the
//                   host, and the encode's only synchronisation comes after it.
//
// Every fp32/fp64 operation that decides a bit of the payload is written with an _rn intrinsic
// (no FMA contraction), in the CPU's order: payloads equal lads_encode's bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

#include "compress/log_quant.h"

namespace psrt::compress::cuda {

inline constexpr int kTileThreads = 256;
inline constexpr int kTileItems = 16;
inline constexpr uint32_t kTile = kTileThreads * kTileItems;  // elements per tile
inline constexpr uint32_t kGroupElements = 32 * 1024;         // moments.h: a group's elements

// One chunk of a batch, as the kernels read it (device memory, filled by the host per launch).
struct Segment {
  float* x = nullptr;        // the chunk (updated in place when g != nullptr)
  const float* g = nullptr;  // error feedback: x += g first (or x += u after u = mu u + g)
  float* u = nullptr;        // momentum correction's u, with g; else null
  float mu = 0;
  uint32_t n = 0;
  float alpha = 0;
  int quant_bits = 8;
  const float* rel = nullptr;  // the codebook's 128 relative bounds (device)
  const float* mag = nullptr;  // and its 128 magnitudes (device), for subtract_sent
  uint32_t group_begin = 0;    // its first group (kernel 1's blocks) in the batch
  uint32_t groups = 0;         // max(1, ceil(n8 / kGroupElements))
  uint32_t tile_begin = 0;     // its first tile (kernel 2's blocks) in the batch
  uint32_t tiles = 0;          // max(1, ceil(n / kTile))
  uint32_t out = 0;            // element offset into the scratch buffers (a multiple of kTile)
  uint32_t body = 0;           // byte offset of its body in the host buffer (a multiple of 16)
};

// What the kernels leave per segment (device memory; copied to the host buffer by kernel 3).
struct SegmentResult {
  double sum_squares = 0;
  float max_abs = 0;
  float tau = 0;
  uint32_t finite = 0;
  uint32_t kept = 0;
  uint32_t varint_bytes = 0;
  uint32_t body_bytes = 0;  // index section + values + scale, as kernel 3 wrote it
  uint32_t use_varint = 0;
};

// Device scratch for a batch of up to `elements` (the segments' rounded sizes summed) in up to
// `segments` segments; owned by CudaLads.
struct Scratch {
  Segment* segs = nullptr;
  SegmentResult* results = nullptr;
  float* thresholds = nullptr;  // 128 per segment
  double* group_sum = nullptr;  // per group
  unsigned* group_max = nullptr;
  double* super_sum = nullptr;  // per group (a segment's super groups at its group_begin)
  unsigned* seg_done = nullptr;  // per segment: kernel 1's finished blocks (wraps to 0)
  unsigned* tile_counter = nullptr;  // kernel 2's next tile (wraps to 0)
  unsigned* tile_status = nullptr;   // per tile: epoch << 2 | 1 (aggregate) or 2 (inclusive)
  // The published summaries, in two arrays: a tile's aggregate is never overwritten by its
  // inclusive prefix while a successor may be reading it.
  uint4* tile_aggregate = nullptr;
  uint4* tile_inclusive = nullptr;
  unsigned* bitmap = nullptr;        // per element / 32
  uint8_t* varints = nullptr;        // 5 bytes per element
  uint8_t* values = nullptr;         // 4 bytes per element (codes use the first byte of each)
  uint32_t* indices = nullptr;       // per element: the kept indices (for subtract_sent)
  uint8_t* host_body = nullptr;      // mapped pinned host memory, Segment::body
  SegmentResult* host_results = nullptr;  // mapped pinned host memory, per segment
};

// Bytes of a segment's body at most: bitmap (or shorter varints), fp32 values, scale.
inline size_t max_body_bytes(uint32_t n) {
  return ((static_cast<size_t>(n) + 7) / 8 + 4 * static_cast<size_t>(n) + 4 + 15) / 16 * 16;
}

// The three kernels on `stream`, for `count` segments already in scratch.segs, `groups` and
// `tiles` in all. `epoch` differs from the last launch's (it tags the look-back's tile states).
cudaError_t launch_lads(const Scratch& scratch, int count, uint32_t groups, uint32_t tiles,
                        uint32_t epoch, cudaStream_t stream);

// For error feedback after a launch of `count` segments: in each, x[i] -= the decoded sent value
// for every kept element (indices, codes and counts from the scratch), in the CPU's fp32
// operations. One launch for all segments.
cudaError_t launch_subtract_sent(const Scratch& scratch, int count, cudaStream_t stream);

}  // namespace psrt::compress::cuda
