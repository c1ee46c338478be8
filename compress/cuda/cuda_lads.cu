#include "compress/cuda/cuda_lads.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include <cuda_runtime.h>

#include "compress/codec.h"
#include "compress/cuda/cuda_status.h"
#include "compress/cuda/event_timer.h"
#include "compress/cuda/lads_kernels.h"
#include "compress/payload_writer.h"
#include "compress/wire_format.h"

namespace psrt::compress::cuda {

namespace {

constexpr int kRanges = 64;  // LogCodebooks: ranges 1..64
constexpr const char* kTernaryOnHost = "cuda lads: quant_bits 1 (ternary) is host only";

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

// The kernels' description of one chunk; x is written only when g is given (encode_update's r).
Segment segment_of(const float* x, const float* g, float* u, float mu, size_t n,
                   const LadsParams& params, const float* rel) {
  Segment seg;
  seg.x = const_cast<float*>(x);
  seg.g = g;
  seg.u = u;
  seg.mu = mu;
  seg.n = static_cast<uint32_t>(n);
  seg.alpha = params.alpha;
  seg.quant_bits = params.quant_bits;
  seg.rel = rel;
  seg.mag = rel + kLogLevels;
  return seg;
}

// The header lads_encode writes for these counts (payload_writer's choice of index section).
PayloadHeader header_for(const LadsParams& params, uint32_t n, const SegmentResult& r) {
  PayloadHeader h;
  h.codec = CodecId::kLaco;
  h.value_mode = params.quant_bits == 32 ? ValueMode::kFp32 : ValueMode::kLog8;
  h.log_range = params.quant_bits == 32 ? 0 : static_cast<uint8_t>(params.log_range);
  h.length = n;
  h.count = r.kept;
  const bool use_varint = r.varint_bytes <= bitmap_bytes(n);
  h.index_mode = use_varint ? IndexMode::kVarint : IndexMode::kBitmap;
  h.index_bytes = static_cast<uint32_t>(use_varint ? r.varint_bytes : bitmap_bytes(n));
  return h;
}

}  // namespace

bool device_available() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

struct CudaLads::Impl {
  size_t cap = 0;           // create's max_elements
  size_t cap_elements = 0;  // scratch elements (segments rounded up to tiles)
  size_t cap_segments = 0;
  size_t cap_groups = 0, cap_tiles = 0, cap_body = 0;
  cudaStream_t stream = nullptr;
  float* x = nullptr;    // staging for host chunks
  float* books = nullptr;  // per range: 128 relative bounds, then 128 magnitudes
  std::vector<bool> book_loaded = std::vector<bool>(kRanges, false);
  Scratch sc;
  Segment* host_segs = nullptr;  // pinned: the launch's segment table, uploaded per encode
  uint32_t epoch = 0;
  // The last successful single-chunk encode, whose sent part subtract_sent takes out, and the
  // last successful batch's segment count, for subtract_sent_batch (-1: none).
  const float* last_x = nullptr;
  size_t last_n = 0;
  int last_batch = -1;

  ~Impl() {
    for (void* p : {static_cast<void*>(x), static_cast<void*>(books),
                    static_cast<void*>(sc.segs), static_cast<void*>(sc.results),
                    static_cast<void*>(sc.thresholds), static_cast<void*>(sc.group_sum),
                    static_cast<void*>(sc.group_max), static_cast<void*>(sc.super_sum),
                    static_cast<void*>(sc.seg_done), static_cast<void*>(sc.tile_counter),
                    static_cast<void*>(sc.tile_status), static_cast<void*>(sc.tile_aggregate),
                    static_cast<void*>(sc.tile_inclusive), static_cast<void*>(sc.bitmap),
                    static_cast<void*>(sc.varints), static_cast<void*>(sc.values),
                    static_cast<void*>(sc.indices)}) {
      if (p != nullptr) cudaFree(p);
    }
    for (void* p : {static_cast<void*>(sc.host_body), static_cast<void*>(sc.host_results),
                    static_cast<void*>(host_segs)}) {
      if (p != nullptr) cudaFreeHost(p);
    }
    if (stream != nullptr) cudaStreamDestroy(stream);
  }

  template <typename T>
  static Status alloc_zero(T*& p, size_t count) {
    PSRT_CUDA(cudaMalloc(&p, sizeof(T) * std::max<size_t>(count, 1)));
    PSRT_CUDA(cudaMemset(p, 0, sizeof(T) * std::max<size_t>(count, 1)));
    return Status::ok();
  }

  Status init(size_t n, size_t segments) {
    cap = n;
    cap_segments = segments;
    cap_elements = round_up(n, kTile) + kTile * segments;
    cap_groups = cap_elements / kGroupElements + segments + 1;
    cap_tiles = cap_elements / kTile + segments + 1;
    cap_body = max_body_bytes(static_cast<uint32_t>(std::min<size_t>(n, UINT32_MAX))) +
               32 * segments;
    PSRT_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    PSRT_CUDA(cudaMalloc(&x, 4 * n + 4));
    if (Status st = alloc_zero(books, size_t{kRanges} * 2 * kLogLevels); !st) return st;
    if (Status st = alloc_zero(sc.segs, segments); !st) return st;
    if (Status st = alloc_zero(sc.results, segments); !st) return st;
    if (Status st = alloc_zero(sc.thresholds, segments * kLogLevels); !st) return st;
    if (Status st = alloc_zero(sc.group_sum, cap_groups); !st) return st;
    if (Status st = alloc_zero(sc.group_max, cap_groups); !st) return st;
    if (Status st = alloc_zero(sc.super_sum, cap_groups); !st) return st;
    if (Status st = alloc_zero(sc.seg_done, segments); !st) return st;
    if (Status st = alloc_zero(sc.tile_counter, 1); !st) return st;
    if (Status st = alloc_zero(sc.tile_status, cap_tiles); !st) return st;
    if (Status st = alloc_zero(sc.tile_aggregate, cap_tiles); !st) return st;
    if (Status st = alloc_zero(sc.tile_inclusive, cap_tiles); !st) return st;
    if (Status st = alloc_zero(sc.bitmap, cap_elements / 32 + 1); !st) return st;
    if (Status st = alloc_zero(sc.varints, 5 * cap_elements); !st) return st;
    if (Status st = alloc_zero(sc.values, 4 * cap_elements); !st) return st;
    if (Status st = alloc_zero(sc.indices, cap_elements); !st) return st;
    // Mapped pinned memory: kernel 3 writes the bodies here itself (UVA: the same address).
    PSRT_CUDA(cudaHostAlloc(&sc.host_body, cap_body, cudaHostAllocMapped));
    PSRT_CUDA(cudaHostAlloc(&sc.host_results, sizeof(SegmentResult) * segments,
                            cudaHostAllocMapped));
    PSRT_CUDA(cudaHostAlloc(&host_segs, sizeof(Segment) * segments, cudaHostAllocDefault));
    PSRT_CUDA(cudaDeviceSynchronize());  // the memsets, before the stream's first use
    return Status::ok();
  }

  // The codebook's bounds and magnitudes on the device (uploaded on first use of a range).
  Result<const float*> book_on_device(const LogCodebook& book) {
    const int range = book.range();
    if (range < 1 || range > kRanges) return Status::error("cuda lads: bad codebook range");
    float* at = books + static_cast<size_t>(range - 1) * 2 * kLogLevels;
    if (!book_loaded[static_cast<size_t>(range - 1)]) {
      PSRT_CUDA(cudaMemcpyAsync(at, book.relative_bounds().data(), 4 * kLogLevels,
                                cudaMemcpyHostToDevice, stream));
      PSRT_CUDA(cudaMemcpyAsync(at + kLogLevels, book.magnitudes().data(), 4 * kLogLevels,
                                cudaMemcpyHostToDevice, stream));
      PSRT_CUDA(cudaStreamSynchronize(stream));  // once per range: the host arrays are pageable
      book_loaded[static_cast<size_t>(range - 1)] = true;
    }
    return static_cast<const float*>(at);
  }

  // One launch sequence for `count` segments (host_segs[0..count) filled but for the offsets),
  // then the payloads. payloads/results: count entries.
  Status run(int count, const LadsParams* params, std::vector<uint8_t>* payloads,
             LadsResult* results) {
    uint32_t groups = 0, tiles = 0, out = 0;
    size_t body = 0;
    for (int s = 0; s < count; ++s) {
      Segment& seg = host_segs[s];
      const uint32_t n8 = seg.n & ~7u;
      seg.group_begin = groups;
      seg.groups = std::max<uint32_t>(1, (n8 + kGroupElements - 1) / kGroupElements);
      seg.tile_begin = tiles;
      seg.tiles = (seg.n + kTile - 1) / kTile;
      seg.out = out;
      seg.body = static_cast<uint32_t>(body);
      groups += seg.groups;
      tiles += seg.tiles;
      out += seg.tiles * kTile;
      body += max_body_bytes(seg.n);
    }
    if (out > cap_elements || groups > cap_groups || tiles > cap_tiles || body > cap_body) {
      return Status::error("cuda lads: batch larger than the buffers");
    }
    PSRT_CUDA(cudaMemcpyAsync(sc.segs, host_segs, sizeof(Segment) * static_cast<size_t>(count),
                              cudaMemcpyHostToDevice, stream));
    epoch = epoch == 0x3fffffffu ? 1 : epoch + 1;
    PSRT_CUDA(launch_lads(sc, count, groups, tiles, epoch, stream));
    PSRT_CUDA(cudaStreamSynchronize(stream));  // the one wait: the bodies are in host memory
    for (int s = 0; s < count; ++s) {
      const SegmentResult& r = sc.host_results[s];
      if (r.finite == 0) return Status::error("laco: gradient chunk holds a NaN or an infinity");
      const uint32_t n = host_segs[s].n;
      const PayloadHeader h = header_for(params[s], n, r);
      const size_t vbytes = value_bytes(h.value_mode, h.count);
      const size_t size = h.index_bytes + vbytes + (h.value_mode == ValueMode::kLog8 ? 4 : 0);
      if (size != r.body_bytes) return Status::error("cuda lads: body size mismatch");
      std::vector<uint8_t>& payload = payloads[s];
      payload.resize(kHeaderBytes + size);
      write_header(h, payload);
      std::memcpy(payload.data() + kHeaderBytes, sc.host_body + host_segs[s].body, size);
      LadsResult& out_r = results[s];
      out_r.rms = static_cast<float>(std::sqrt(r.sum_squares / static_cast<double>(n)));
      out_r.threshold = r.tau;
      out_r.scale = r.max_abs;
      out_r.kept = r.kept;
    }
    return Status::ok();
  }

  Result<LadsResult> encode(const float* dx, size_t n, const LadsParams& params,
                            const LogCodebook& book, std::vector<uint8_t>& payload,
                            const float* g = nullptr, float* u = nullptr, float mu = 0) {
    forget();
    if (params.quant_bits == 1) return Status::error(kTernaryOnHost);
    if (n > cap) return Status::error("cuda lads: chunk larger than the buffers");
    if (n == 0) {
      LadsScratch scratch;
      Result<LadsResult> r = lads_encode({}, params, book, scratch, payload);
      if (r) last_x = dx;  // last_n 0: nothing to subtract
      return r;
    }
    Result<const float*> rel = book_on_device(book);
    if (!rel) return rel.status();
    host_segs[0] = segment_of(dx, g, u, mu, n, params, *rel);
    LadsResult result;
    if (Status st = run(1, &params, &payload, &result); !st) return st;
    last_x = dx;
    last_n = n;
    return result;
  }

  Result<std::vector<LadsResult>> encode_batch(std::span<const LadsBatchItem> items,
                                               std::vector<std::vector<uint8_t>>& payloads) {
    forget();
    payloads.resize(items.size());
    std::vector<LadsResult> results(items.size());
    std::vector<LadsParams> params;
    std::vector<size_t> on_device;  // item of each segment (empty chunks are the CPU's)
    for (size_t j = 0; j < items.size(); ++j) {
      const LadsBatchItem& item = items[j];
      if (item.book == nullptr) return Status::error("cuda lads: batch item without codebook");
      if (item.params.quant_bits == 1) return Status::error(kTernaryOnHost);
      if (item.n == 0) {
        LadsScratch scratch;
        Result<LadsResult> r = lads_encode({}, item.params, *item.book, scratch, payloads[j]);
        if (!r) return r.status();
        results[j] = *r;
        continue;
      }
      if (on_device.size() == cap_segments || item.n > cap) {
        return Status::error("cuda lads: batch larger than the buffers");
      }
      Result<const float*> rel = book_on_device(*item.book);
      if (!rel) return rel.status();
      host_segs[on_device.size()] =
          segment_of(item.values, item.g, item.u, item.mu, item.n, item.params, *rel);
      params.push_back(item.params);
      on_device.push_back(j);
    }
    if (on_device.empty()) {
      last_batch = 0;
      return results;
    }
    std::vector<std::vector<uint8_t>> out(on_device.size());
    std::vector<LadsResult> out_r(on_device.size());
    const int count = static_cast<int>(on_device.size());
    if (Status st = run(count, params.data(), out.data(), out_r.data()); !st) return st;
    last_batch = count;
    for (size_t s = 0; s < on_device.size(); ++s) {
      payloads[on_device[s]] = std::move(out[s]);
      results[on_device[s]] = out_r[s];
    }
    return results;
  }

  void forget() {
    last_x = nullptr;
    last_n = 0;
    last_batch = -1;
  }

  Status subtract_sent(float* dx, size_t n) {
    if (last_x == nullptr || dx != last_x || n != last_n) {
      return Status::error("cuda lads: subtract_sent without an encode of the same values");
    }
    const bool any = n > 0;
    forget();  // once: a second call would subtract twice
    if (any) PSRT_CUDA(launch_subtract_sent(sc, 1, stream));
    return Status::ok();
  }

  Status subtract_sent_batch() {
    if (last_batch < 0) return Status::error("cuda lads: subtract_sent_batch without a batch");
    const int count = last_batch;
    forget();
    if (count > 0) PSRT_CUDA(launch_subtract_sent(sc, count, stream));
    return Status::ok();
  }
};

CudaLads::CudaLads(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CudaLads::~CudaLads() = default;

Result<std::unique_ptr<CudaLads>> CudaLads::create(size_t max_elements, size_t max_segments) {
  if (!device_available()) return Status::error("cuda lads: no CUDA device");
  if (max_elements == 0 || max_elements >= (size_t{1} << 31)) {
    return Status::error("cuda lads: max_elements must be in 1..2^31-1");
  }
  if (max_segments == 0 || max_segments > 65535) {
    return Status::error("cuda lads: max_segments must be in 1..65535");
  }
  auto impl = std::make_unique<Impl>();
  if (Status s = impl->init(max_elements, max_segments); !s) return s;
  return std::unique_ptr<CudaLads>(new CudaLads(std::move(impl)));
}

Result<LadsResult> CudaLads::encode_device(const float* d_values, size_t n,
                                           const LadsParams& params, const LogCodebook& book,
                                           std::vector<uint8_t>& payload) {
  return impl_->encode(d_values, n, params, book, payload);
}

Result<LadsResult> CudaLads::encode_update(float* d_r, const float* d_g, float* d_u, float mu,
                                           size_t n, const LadsParams& params,
                                           const LogCodebook& book, std::vector<uint8_t>& payload) {
  if (d_g == nullptr) return Status::error("cuda lads: encode_update without a gradient");
  return impl_->encode(d_r, n, params, book, payload, d_g, d_u, mu);
}

Result<std::vector<LadsResult>> CudaLads::encode_batch(
    std::span<const LadsBatchItem> items, std::vector<std::vector<uint8_t>>& payloads) {
  return impl_->encode_batch(items, payloads);
}

Status CudaLads::subtract_sent_batch() {
  return impl_->subtract_sent_batch();
}

int CudaLads::launches_per_encode() const {
  return 4;  // the segment table's upload, moments, select_pack, assemble
}

Status CudaLads::subtract_sent(float* d_values, size_t n) {
  return impl_->subtract_sent(d_values, n);
}

CUstream_st* CudaLads::stream() const { return impl_->stream; }

size_t CudaLads::capacity() const { return impl_->cap; }

Result<LadsResult> CudaLads::encode_host(std::span<const float> values, const LadsParams& params,
                                         const LogCodebook& book, std::vector<uint8_t>& payload) {
  if (values.size() > impl_->cap) return Status::error("cuda lads: chunk larger than the buffers");
  PSRT_CUDA(cudaMemcpyAsync(impl_->x, values.data(), values.size_bytes(), cudaMemcpyHostToDevice,
                            impl_->stream));
  return impl_->encode(impl_->x, values.size(), params, book, payload);
}

Result<double> CudaLads::time_encode(std::span<const float> values, const LadsParams& params,
                                     const LogCodebook& book, int reps) {
  std::vector<uint8_t> payload;
  Result<LadsResult> warm = encode_host(values, params, book, payload);
  if (!warm) return warm.status();
  return seconds_per_rep(impl_->stream, reps, [&]() -> Status {
    Result<LadsResult> e = impl_->encode(impl_->x, values.size(), params, book, payload);
    return e ? Status::ok() : e.status();
  });
}

Result<double> CudaLads::time_encode_batch(std::span<const std::vector<float>> chunks,
                                           const LadsParams& params, const LogCodebook& book,
                                           int reps) {
  std::vector<LadsBatchItem> items;
  size_t at = 0;
  for (const std::vector<float>& c : chunks) {
    if (at + c.size() > impl_->cap)
      return Status::error("cuda lads: batch larger than the buffers");
    PSRT_CUDA(cudaMemcpyAsync(impl_->x + at, c.data(), 4 * c.size(), cudaMemcpyHostToDevice,
                              impl_->stream));
    items.push_back(LadsBatchItem{impl_->x + at, c.size(), params, &book});
    at += c.size();
  }
  std::vector<std::vector<uint8_t>> payloads;
  Result<std::vector<LadsResult>> warm = impl_->encode_batch(items, payloads);
  if (!warm) return warm.status();
  return seconds_per_rep(impl_->stream, reps, [&]() -> Status {
    Result<std::vector<LadsResult>> e = impl_->encode_batch(items, payloads);
    return e ? Status::ok() : e.status();
  });
}

Result<double> CudaLads::time_copy(size_t n, int reps) {
  if (n > impl_->cap) return Status::error("cuda lads: copy larger than the buffers");
  auto copy = [&]() -> Status {
    PSRT_CUDA(cudaMemcpyAsync(impl_->sc.values, impl_->x, 4 * n, cudaMemcpyDeviceToDevice,
                              impl_->stream));
    return Status::ok();
  };
  if (Status st = copy(); !st) return st;  // warm
  return seconds_per_rep(impl_->stream, reps, copy);
}

}  // namespace psrt::compress::cuda
