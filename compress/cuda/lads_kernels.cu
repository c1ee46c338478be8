#include "compress/cuda/lads_kernels.h"

#include <cub/block/block_load.cuh>
#include <cub/block/block_scan.cuh>

#include "compress/lads_select.h"

namespace psrt::compress::cuda {

namespace {

constexpr int kMomentsThreads = 256;  // 32 blocks of 8 lanes: one group per CUDA block
constexpr int kWarps = kMomentsThreads / 32;
constexpr float kDenormMin = 1.401298464e-45f;
constexpr unsigned kAll = 0xffffffffu;

// The segment holding `item` (a group or a tile): the last whose begin <= item. Begins strictly
// increase (every segment has at least one group and one tile).
__device__ int find_segment(const Segment* segs, int count, uint32_t item,
                            uint32_t Segment::*begin) {
  int lo = 0, hi = count - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (segs[mid].*begin <= item) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

// Element i of the segment as the moments see it: for error feedback, x[i] += g[i] (or u[i] =
// mu * u[i] + g[i], x[i] += u[i]) first, stored back, in moments_pass's fp32 operations.
__device__ __forceinline__ float take(const Segment& s, uint32_t i) {
  if (s.g == nullptr) return s.x[i];
  float add = s.g[i];
  if (s.u != nullptr) {
    add = __fadd_rn(__fmul_rn(s.mu, s.u[i]), add);
    s.u[i] = add;
  }
  const float v = __fadd_rn(s.x[i], add);
  s.x[i] = v;
  return v;
}

// The last block of a segment: super-group sums, the total, the tail [n8, n), the maximum, and
// from them the RMS, tau and the log8 thresholds (lads_encode's and lads_threshold's operations).
__device__ void finish_moments(const Scratch& sc, int si, const Segment& seg, unsigned* warp_max) {
  __shared__ float s_scale;
  const uint32_t supers = (seg.groups + 63) / 64;
  for (uint32_t s = threadIdx.x; s < supers; s += blockDim.x) {
    double sum = 0.0;
    const uint32_t end = min(seg.groups, (s + 1) * 64);
    for (uint32_t g = s * 64; g < end; ++g) {
      sum = __dadd_rn(sum, __ldcg(&sc.group_sum[seg.group_begin + g]));
    }
    sc.super_sum[seg.group_begin + s] = sum;
  }
  unsigned m = 0;
  for (uint32_t g = threadIdx.x; g < seg.groups; g += blockDim.x) {
    m = max(m, __ldcg(&sc.group_max[seg.group_begin + g]));
  }
  m = __reduce_max_sync(kAll, m);
  if (threadIdx.x % 32 == 0) warp_max[threadIdx.x / 32] = m;
  __syncthreads();
  if (threadIdx.x == 0) {
    double total = 0.0;
    for (uint32_t s = 0; s < supers; ++s)
      total = __dadd_rn(total, sc.super_sum[seg.group_begin + s]);
    unsigned mx = 0;
    for (int w = 0; w < kWarps; ++w) mx = max(mx, warp_max[w]);
    for (uint32_t i = seg.n & ~7u; i < seg.n; ++i) {
      const float v = take(seg, i);
      total = __dadd_rn(total, __dmul_rn(static_cast<double>(v), static_cast<double>(v)));
      mx = max(mx, __float_as_uint(fabsf(v)));
    }
    const float scale = __uint_as_float(mx);
    const float rms =
        __double2float_rn(__dsqrt_rn(__ddiv_rn(total, static_cast<double>(seg.n))));
    const float floor = seg.quant_bits == 8 ? __fmul_rn(scale, seg.rel[0]) : kDenormMin;
    SegmentResult r;
    r.sum_squares = total;
    r.max_abs = scale;
    r.tau = fmaxf(__fmul_rn(seg.alpha, rms), fmaxf(floor, kDenormMin));
    r.finite = isfinite(total) ? 1u : 0u;
    sc.results[si] = r;
    s_scale = scale;
  }
  __syncthreads();
  if (threadIdx.x < kLogLevels) {
    sc.thresholds[si * kLogLevels + threadIdx.x] = __fmul_rn(s_scale, seg.rel[threadIdx.x]);
  }
}

// Kernel 1: one CUDA block per group of 32 blocks of 1024 elements; thread 8 b + l is lane l of
// block b (moments.h). The last block of each segment to finish completes the segment.
__global__ void __launch_bounds__(kMomentsThreads) moments_kernel(Scratch sc, int count) {
  __shared__ float block_sum[32];
  __shared__ unsigned warp_max[kWarps];
  __shared__ bool last;
  const int si = find_segment(sc.segs, count, blockIdx.x, &Segment::group_begin);
  const Segment seg = sc.segs[si];
  const uint32_t group = blockIdx.x - seg.group_begin;
  const uint64_t n8 = seg.n & ~7u;
  const uint32_t b = threadIdx.x / 8, lane = threadIdx.x % 8;
  const uint64_t start = (uint64_t{group} * 32 + b) * 1024;
  float acc = 0.0f;
  unsigned mx = 0;
  if (start < n8) {
    const auto steps = static_cast<uint32_t>((min(start + 1024, n8) - start) / 8);
    const auto first = static_cast<uint32_t>(start) + lane;
    if (seg.g == nullptr) {
      // Read only: the loads of an unrolled stretch are independent (only the sum is a chain),
      // so many are in flight per thread.
      const float* __restrict__ x = seg.x + first;
      constexpr uint32_t kBatch = 32;  // loads in flight per thread (a small chunk has few threads)
      uint32_t j = 0;
      for (; j + kBatch <= steps; j += kBatch) {
        float v[kBatch];
#pragma unroll
        for (uint32_t q = 0; q < kBatch; ++q) v[q] = __ldg(x + 8 * (j + q));
#pragma unroll
        for (uint32_t q = 0; q < kBatch; ++q) {
          acc = __fadd_rn(acc, __fmul_rn(v[q], v[q]));
          mx = max(mx, __float_as_uint(fabsf(v[q])));
        }
      }
      for (; j < steps; ++j) {
        const float v = __ldg(x + 8 * j);
        acc = __fadd_rn(acc, __fmul_rn(v, v));
        mx = max(mx, __float_as_uint(fabsf(v)));
      }
    } else {
#pragma unroll 8
      for (uint32_t j = 0; j < steps; ++j) {
        const float v = take(seg, first + 8 * j);
        acc = __fadd_rn(acc, __fmul_rn(v, v));
        mx = max(mx, __float_as_uint(fabsf(v)));
      }
    }
  }
  // (L0 + L4) + (L1 + L5) and (L2 + L6) + (L3 + L7), in the CPU's order, on lane 0 of the block.
  const float pair = __fadd_rn(acc, __shfl_down_sync(kAll, acc, 4));
  const float two = __fadd_rn(pair, __shfl_down_sync(kAll, pair, 1));
  const float four = __fadd_rn(two, __shfl_down_sync(kAll, two, 2));
  if (lane == 0) block_sum[b] = four;
  mx = __reduce_max_sync(kAll, mx);
  if (threadIdx.x % 32 == 0) warp_max[threadIdx.x / 32] = mx;
  __syncthreads();
  if (threadIdx.x == 0) {
    double sum = 0.0;
    for (uint32_t k = 0; k < 32; ++k) {
      if ((uint64_t{group} * 32 + k) * 1024 < n8) {
        sum = __dadd_rn(sum, static_cast<double>(block_sum[k]));
      }
    }
    unsigned m = 0;
    for (int w = 0; w < kWarps; ++w) m = max(m, warp_max[w]);
    sc.group_sum[blockIdx.x] = sum;
    sc.group_max[blockIdx.x] = m;
    __threadfence();  // the sums before the count that tells the last block to read them
    last = atomicInc(&sc.seg_done[si], seg.groups - 1) == seg.groups - 1;  // wraps to 0
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  finish_moments(sc, si, seg, warp_max);
}

using Summary = KeptSummary;
using Combine = CombineKept;

__device__ uint4 pack(const Summary& s) { return make_uint4(s.count, s.first, s.last, s.bytes); }
__device__ Summary unpack(const uint4& v) { return {v.x, v.y, v.z, v.w}; }

// Release: the value before the status that announces it.
__device__ void publish(uint4* slot, unsigned* status, const Summary& s, unsigned word) {
  __stcg(slot, pack(s));
  __threadfence();
  atomicExch(status, word);
}

// Thread 0's decoupled look-back: the summary of every tile of the segment before `tile`.
__device__ Summary look_back(const Scratch& sc, uint32_t tile, uint32_t local, unsigned tag,
                             const Summary& aggregate) {
  Summary prefix{0, 0, 0, 0};
  if (local == 0) {
    publish(&sc.tile_inclusive[tile], &sc.tile_status[tile], aggregate, tag | 2u);
    return prefix;
  }
  publish(&sc.tile_aggregate[tile], &sc.tile_status[tile], aggregate, tag | 1u);
  for (uint32_t p = tile - 1;; --p) {
    unsigned w;
    do {
      w = *reinterpret_cast<volatile unsigned*>(&sc.tile_status[p]);
    } while ((w & ~3u) != tag || (w & 3u) == 0);
    __threadfence();  // acquire: the value after the status
    const bool inclusive = (w & 3u) == 2u;
    const Summary q = unpack(__ldcg(inclusive ? &sc.tile_inclusive[p] : &sc.tile_aggregate[p]));
    prefix = Combine{}(q, prefix);
    if (inclusive) break;  // the segment's first tile is always inclusive: never past it
  }
  publish(&sc.tile_inclusive[tile], &sc.tile_status[tile], Combine{}(prefix, aggregate), tag | 2u);
  return prefix;
}

using TileLoad = cub::BlockLoad<float, kTileThreads, kTileItems, cub::BLOCK_LOAD_TRANSPOSE>;
using TileScan = cub::BlockScan<Summary, kTileThreads>;

// Kernel 2: one tile of kTile elements per CUDA block, taken in order from a counter (so a tile
// only ever waits for tiles already running); thread t holds elements 16 t .. 16 t + 15.
__global__ void __launch_bounds__(kTileThreads)
    select_pack_kernel(Scratch sc, int count, uint32_t tiles, uint32_t epoch) {
  __shared__ union {
    typename TileLoad::TempStorage load;
    typename TileScan::TempStorage scan;
  } temp;
  __shared__ float t[kLogLevels];
  __shared__ uint32_t s_tile;
  __shared__ Summary s_prefix;
  if (threadIdx.x == 0) s_tile = atomicInc(sc.tile_counter, tiles - 1);  // wraps to 0
  __syncthreads();
  const uint32_t tile = s_tile;
  const int si = find_segment(sc.segs, count, tile, &Segment::tile_begin);
  const Segment seg = sc.segs[si];
  const float tau = sc.results[si].tau;
  if (threadIdx.x < kLogLevels) t[threadIdx.x] = sc.thresholds[si * kLogLevels + threadIdx.x];
  const uint32_t local = tile - seg.tile_begin;
  const uint32_t base = local * kTile;
  const auto valid = static_cast<int>(min(kTile, seg.n - base));
  float v[kTileItems];
  TileLoad(temp.load).Load(seg.x + base, v, valid, 0.0f);
  __syncthreads();  // temp is reused by the scan

  const uint32_t first = base + threadIdx.x * kTileItems;
  uint32_t mask = 0;
  const Summary mine = summarize_kept(v, kTileItems, first, seg.n, tau, &mask);
  // The bitmap: word w holds elements 32 w .. 32 w + 31, bit b for element 32 w + b.
  const uint32_t upper = __shfl_down_sync(kAll, mask, 1);
  if (threadIdx.x % 2 == 0 && first < seg.n)
    sc.bitmap[seg.out / 32 + first / 32] = mask | upper << 16;

  Summary excl, aggregate;
  TileScan(temp.scan).ExclusiveScan(mine, excl, Summary{0, 0, 0, 0}, Combine{}, aggregate);
  if (threadIdx.x == 0) {
    const unsigned tag = (epoch & 0x3fffffffu) << 2;
    const Summary prefix = look_back(sc, tile, local, tag, aggregate);
    s_prefix = prefix;
    if (local == seg.tiles - 1) {
      const Summary total = Combine{}(prefix, aggregate);
      sc.results[si].kept = total.count;
      sc.results[si].varint_bytes = varint_bytes(total);
    }
  }
  __syncthreads();

  // Everything kept before this thread's elements, in the whole segment.
  write_kept(v, kTileItems, mask, first, Combine{}(s_prefix, excl), seg.quant_bits, t,
             sc.varints + 5 * size_t{seg.out}, sc.values + 4 * size_t{seg.out},
             sc.indices + seg.out);
}

// Kernel 3: gridDim.y segments; each one's body (index section, values, scale) into the mapped
// host buffer in 4-byte words, and its result beside it.
__global__ void assemble_kernel(Scratch sc) {
  const int si = static_cast<int>(blockIdx.y);
  const Segment seg = sc.segs[si];
  SegmentResult r = sc.results[si];
  const uint32_t bitmap_size = (seg.n + 7) / 8;
  const bool varint = r.varint_bytes <= bitmap_size;
  const uint32_t ib = varint ? r.varint_bytes : bitmap_size;
  const uint32_t vb = seg.quant_bits == 32 ? 4 * r.kept : r.kept;
  const uint32_t body = r.finite ? ib + vb + (seg.quant_bits == 32 ? 0 : 4) : 0;
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    r.body_bytes = body;
    r.use_varint = varint ? 1u : 0u;
    sc.host_results[si] = r;
  }
  const uint8_t* index = varint ? sc.varints + 5 * size_t{seg.out}
                                : reinterpret_cast<const uint8_t*>(sc.bitmap + seg.out / 32);
  const uint8_t* vals = sc.values + 4 * size_t{seg.out};
  const uint32_t scale_bits = __float_as_uint(r.max_abs);
  auto* out = reinterpret_cast<uint32_t*>(sc.host_body + seg.body);
  const uint32_t words = (body + 3) / 4;
  for (uint32_t w = blockIdx.x * blockDim.x + threadIdx.x; w < words;
       w += gridDim.x * blockDim.x) {
    uint32_t word = 0;
    for (uint32_t b = 0; b < 4; ++b) {
      const uint32_t p = 4 * w + b;
      uint32_t byte = 0;
      if (p < ib) {
        byte = index[p];
      } else if (p < ib + vb) {
        byte = vals[p - ib];
      } else if (p < body) {
        byte = (scale_bits >> (8 * (p - ib - vb))) & 0xffu;  // put_f32: little-endian
      }
      word |= byte << (8 * b);
    }
    out[w] = word;
  }
}

// Error feedback's "x -= sent" for the kept elements of segment blockIdx.y: LogCodebook::decode
// (scale * m[c], then the sign) and accumulate_payload with weight -1 (x + -sent), in rounded
// fp32 operations that are never contracted: the CPU's result bit for bit.
__global__ void subtract_sent_kernel(Scratch sc) {
  const int si = static_cast<int>(blockIdx.y);
  const Segment seg = sc.segs[si];
  const uint32_t k = sc.results[si].kept;
  const float scale = sc.results[si].max_abs;
  const uint32_t* idx = sc.indices + seg.out;
  const uint8_t* values = sc.values + 4 * size_t{seg.out};
  for (uint32_t j = blockIdx.x * blockDim.x + threadIdx.x; j < k; j += gridDim.x * blockDim.x) {
    float sent;
    if (seg.quant_bits == 32) {
      sent = __uint_as_float(reinterpret_cast<const uint32_t*>(values)[j]);
    } else {
      const unsigned c = values[j];
      const float m = __fmul_rn(scale, seg.mag[c & 0x7fu]);
      sent = (c & 0x80u) ? -m : m;
    }
    const uint32_t i = idx[j];
    seg.x[i] = __fadd_rn(seg.x[i], -sent);
  }
}

}  // namespace

cudaError_t launch_lads(const Scratch& scratch, int count, uint32_t groups, uint32_t tiles,
                        uint32_t epoch, cudaStream_t stream) {
  moments_kernel<<<groups, kMomentsThreads, 0, stream>>>(scratch, count);
  select_pack_kernel<<<tiles, kTileThreads, 0, stream>>>(scratch, count, tiles, epoch);
  assemble_kernel<<<dim3(32, static_cast<unsigned>(count)), 256, 0, stream>>>(scratch);
  return cudaGetLastError();
}

cudaError_t launch_subtract_sent(const Scratch& scratch, int count, cudaStream_t stream) {
  subtract_sent_kernel<<<dim3(32, static_cast<unsigned>(count)), 256, 0, stream>>>(scratch);
  return cudaGetLastError();
}

}  // namespace psrt::compress::cuda
