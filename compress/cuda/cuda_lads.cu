#include "compress/cuda/cuda_lads.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include <cub/device/device_scan.cuh>
#include <cub/device/device_select.cuh>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <thrust/iterator/counting_iterator.h>

#include "compress/codec.h"
#include "compress/cuda/cuda_status.h"
#include "compress/payload_writer.h"
#include "compress/wire_format.h"

namespace psrt::compress::cuda {

namespace {

constexpr int kThreads = 256;

// Device scalars, one allocation.
struct Scalars {
  float nrm;
  unsigned max_bits;  // max |g| as float bits: order-preserving for non-negative floats
  float tau;
  float scale;
  int kept;
};

__global__ void max_abs_kernel(const float* x, size_t n, unsigned* max_bits) {
  unsigned m = 0;
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x) {
    m = max(m, __float_as_uint(fabsf(x[i])));
  }
  m = __reduce_max_sync(0xffffffffu, m);
  if ((threadIdx.x & 31) == 0) atomicMax(max_bits, m);
}

// One block of 128 threads: thresholds t[c] = scale * b[c] and tau, with the same fp32 operations
// as lads_threshold() and LogCodebook::thresholds() on the CPU.
__global__ void prepare_kernel(Scalars* s, size_t n, float alpha, int quant_bits, const float* rel,
                               float* t) {
  const float scale = __uint_as_float(s->max_bits);
  const int c = threadIdx.x;
  t[c] = __fmul_rn(scale, rel[c]);
  if (c == 0) {
    const float rms = static_cast<float>(static_cast<double>(s->nrm) / sqrt(static_cast<double>(n)));
    const float tau = __fmul_rn(alpha, rms);
    const float tiny = 1.401298464e-45f;  // denorm_min
    const float floor = quant_bits == 8 ? __fmul_rn(scale, rel[0]) : tiny;
    s->tau = fmaxf(tau, fmaxf(floor, tiny));
    s->scale = scale;
  }
}

// The bitmap of kept elements, a warp ballot per 32 elements.
__global__ void bitmap_kernel(const float* x, size_t n, const Scalars* s, unsigned* bitmap) {
  const size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x;
  const bool keep = i < n && fabsf(x[i]) >= s->tau;
  const unsigned word = __ballot_sync(0xffffffffu, keep);
  if ((threadIdx.x & 31) == 0 && i < n) bitmap[i / 32] = word;
}

struct KeepOp {
  const float* x;
  const Scalars* s;
  __device__ bool operator()(uint32_t i) const { return fabsf(x[i]) >= s->tau; }
};

__device__ uint32_t delta_of(const uint32_t* idx, size_t j) {
  return j == 0 ? idx[0] : idx[j] - idx[j - 1] - 1;
}

__device__ uint32_t varint_len(uint32_t v) {
  return v < (1u << 7) ? 1 : v < (1u << 14) ? 2 : v < (1u << 21) ? 3 : v < (1u << 28) ? 4 : 5;
}

__global__ void varint_len_kernel(const uint32_t* idx, size_t k, uint32_t* len) {
  const size_t j = blockIdx.x * size_t{blockDim.x} + threadIdx.x;
  if (j < k) len[j] = varint_len(delta_of(idx, j));
}

// Quantize and pack in one pass: element j's varint at end[j] - len, its code (or fp32 value).
__global__ void pack_kernel(const float* x, const uint32_t* idx, size_t k, const uint32_t* end,
                            const float* t, int quant_bits, uint8_t* varints, uint8_t* values) {
  const size_t j = blockIdx.x * size_t{blockDim.x} + threadIdx.x;
  if (j >= k) return;
  uint32_t d = delta_of(idx, j);
  uint8_t* p = varints + end[j] - varint_len(d);
  while (d >= 0x80u) {
    *p++ = static_cast<uint8_t>(d | 0x80u);
    d >>= 7;
  }
  *p = static_cast<uint8_t>(d);
  const float v = x[idx[j]];
  if (quant_bits == 32) {
    memcpy(values + 4 * j, &v, 4);
    return;
  }
  const float a = fabsf(v);
  unsigned c = 0;
  for (unsigned step = 64; step != 0; step >>= 1) c += (a >= t[c + step]) ? step : 0;
  values[j] = static_cast<uint8_t>(c | (v < 0.0f ? 0x80u : 0u));
}

// Error feedback's "residual -= sent" for kept element j, from the indices and codes pack_kernel
// left: the same fp32 operations as the CPU, LogCodebook::decode (scale * m[c], then the sign) and
// accumulate_payload with weight -1 (r + -1 * sent; -1 * sent is exact, so r + -sent). __fmul_rn
// and __fadd_rn are never contracted into an FMA, so the result is the CPU's bit for bit.
__global__ void subtract_sent_kernel(float* x, const uint32_t* idx, size_t k, const uint8_t* values,
                                     int quant_bits, const Scalars* s, const float* mag) {
  const size_t j = blockIdx.x * size_t{blockDim.x} + threadIdx.x;
  if (j >= k) return;
  float sent;
  if (quant_bits == 32) {
    memcpy(&sent, values + 4 * j, 4);
  } else {
    const unsigned c = values[j];
    const float m = __fmul_rn(s->scale, mag[c & 0x7fu]);
    sent = (c & 0x80u) ? -m : m;
  }
  const uint32_t i = idx[j];
  x[i] = __fadd_rn(x[i], -sent);
}

unsigned blocks_for(size_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

}  // namespace

bool device_available() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

struct CudaLads::Impl {
  size_t cap = 0;
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  float* x = nullptr;  // staging for host chunks
  Scalars* s = nullptr;
  Scalars* host_s = nullptr;  // pinned
  float* rel = nullptr;
  float* mag = nullptr;  // the codebook's magnitudes, for subtract_sent
  float* t = nullptr;
  int rel_range = 0;     // the range rel and mag hold
  // The last successful encode, which subtract_sent undoes the sent part of.
  const float* last_x = nullptr;
  size_t last_n = 0;
  size_t last_k = 0;
  int last_bits = 0;
  unsigned* bitmap = nullptr;
  uint32_t* indices = nullptr;
  uint32_t* len = nullptr;
  uint32_t* end = nullptr;
  uint8_t* varints = nullptr;
  uint8_t* values = nullptr;
  void* temp = nullptr;
  size_t temp_bytes = 0;

  ~Impl() {
    for (void* p : {static_cast<void*>(x), static_cast<void*>(s), static_cast<void*>(rel),
                    static_cast<void*>(mag), static_cast<void*>(t), static_cast<void*>(bitmap),
                    static_cast<void*>(indices), static_cast<void*>(len), static_cast<void*>(end),
                    static_cast<void*>(varints), static_cast<void*>(values), temp}) {
      if (p != nullptr) cudaFree(p);
    }
    if (host_s != nullptr) cudaFreeHost(host_s);
    if (blas != nullptr) cublasDestroy(blas);
    if (stream != nullptr) cudaStreamDestroy(stream);
  }

  Status init(size_t n) {
    cap = n;
    PSRT_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    PSRT_CUBLAS(cublasCreate(&blas));
    PSRT_CUBLAS(cublasSetStream(blas, stream));
    PSRT_CUBLAS(cublasSetPointerMode(blas, CUBLAS_POINTER_MODE_DEVICE));
    PSRT_CUDA(cudaMalloc(&x, 4 * n + 4));
    PSRT_CUDA(cudaMalloc(&s, sizeof(Scalars)));
    PSRT_CUDA(cudaMallocHost(&host_s, sizeof(Scalars)));
    PSRT_CUDA(cudaMalloc(&rel, 4 * kLogLevels));
    PSRT_CUDA(cudaMalloc(&mag, 4 * kLogLevels));
    PSRT_CUDA(cudaMalloc(&t, 4 * kLogLevels));
    PSRT_CUDA(cudaMalloc(&bitmap, 4 * (n / 32 + 1)));
    PSRT_CUDA(cudaMalloc(&indices, 4 * n + 4));
    PSRT_CUDA(cudaMalloc(&len, 4 * n + 4));
    PSRT_CUDA(cudaMalloc(&end, 4 * n + 4));
    PSRT_CUDA(cudaMalloc(&varints, 5 * n + 5));
    PSRT_CUDA(cudaMalloc(&values, 4 * n + 4));
    size_t select_bytes = 0, scan_bytes = 0;
    PSRT_CUDA(cub::DeviceSelect::If(nullptr, select_bytes, thrust::counting_iterator<uint32_t>(0),
                                    indices, &s->kept, static_cast<int64_t>(n), KeepOp{x, s}));
    PSRT_CUDA(cub::DeviceScan::InclusiveSum(nullptr, scan_bytes, len, end, static_cast<int64_t>(n)));
    temp_bytes = std::max(select_bytes, scan_bytes);
    PSRT_CUDA(cudaMalloc(&temp, temp_bytes));
    return Status::ok();
  }

  Result<LadsResult> encode(const float* dx, size_t n, const LadsParams& params,
                            const LogCodebook& book, std::vector<uint8_t>& payload) {
    last_x = nullptr;
    if (n > cap) return Status::error("cuda lads: chunk larger than the buffers");
    if (n == 0) {
      LadsScratch scratch;
      Result<LadsResult> r = lads_encode({}, params, book, scratch, payload);
      if (r) remember(dx, 0, 0, params.quant_bits);
      return r;
    }
    if (rel_range != book.range()) {
      PSRT_CUDA(cudaMemcpyAsync(rel, book.relative_bounds().data(), 4 * kLogLevels,
                                cudaMemcpyHostToDevice, stream));
      PSRT_CUDA(cudaMemcpyAsync(mag, book.magnitudes().data(), 4 * kLogLevels,
                                cudaMemcpyHostToDevice, stream));
      rel_range = book.range();
    }
    PSRT_CUDA(cudaMemsetAsync(s, 0, sizeof(Scalars), stream));
    max_abs_kernel<<<std::min(blocks_for(n), 1024u), kThreads, 0, stream>>>(dx, n, &s->max_bits);
    PSRT_CUDA(cudaGetLastError());
    PSRT_CUBLAS(cublasSnrm2(blas, static_cast<int>(n), dx, 1, &s->nrm));
    prepare_kernel<<<1, kLogLevels, 0, stream>>>(s, n, params.alpha, params.quant_bits, rel, t);
    PSRT_CUDA(cudaGetLastError());
    // The bitmap, one ballot pass; sent if smaller than the varints.
    bitmap_kernel<<<blocks_for(n), kThreads, 0, stream>>>(dx, n, s, bitmap);
    PSRT_CUDA(cudaGetLastError());
    PSRT_CUDA(cub::DeviceSelect::If(temp, temp_bytes, thrust::counting_iterator<uint32_t>(0),
                                    indices, &s->kept, static_cast<int64_t>(n), KeepOp{dx, s},
                                    stream));
    PSRT_CUDA(cudaMemcpyAsync(host_s, s, sizeof(Scalars), cudaMemcpyDeviceToHost, stream));
    PSRT_CUDA(cudaStreamSynchronize(stream));
    if (!std::isfinite(host_s->nrm)) {
      return Status::error("laco: gradient chunk holds a NaN or an infinity");
    }
    const auto k = static_cast<size_t>(host_s->kept);
    uint32_t varint_bytes = 0;
    if (k > 0) {
      varint_len_kernel<<<blocks_for(k), kThreads, 0, stream>>>(indices, k, len);
      PSRT_CUDA(cudaGetLastError());
      PSRT_CUDA(cub::DeviceScan::InclusiveSum(temp, temp_bytes, len, end, static_cast<int64_t>(k), stream));
      pack_kernel<<<blocks_for(k), kThreads, 0, stream>>>(dx, indices, k, end, t, params.quant_bits,
                                                         varints, values);
      PSRT_CUDA(cudaGetLastError());
      PSRT_CUDA(cudaMemcpyAsync(&varint_bytes, end + k - 1, 4, cudaMemcpyDeviceToHost, stream));
      PSRT_CUDA(cudaStreamSynchronize(stream));
    }

    // Header and sections, laid out as payload_writer does.
    PayloadHeader h;
    h.codec = CodecId::kLaco;
    h.value_mode = params.quant_bits == 32 ? ValueMode::kFp32 : ValueMode::kLog8;
    h.log_range = params.quant_bits == 32 ? 0 : static_cast<uint8_t>(params.log_range);
    h.length = static_cast<uint32_t>(n);
    h.count = static_cast<uint32_t>(k);
    const size_t bitmap_size = bitmap_bytes(h.length);
    const bool use_varint = varint_bytes <= bitmap_size;
    h.index_mode = use_varint ? IndexMode::kVarint : IndexMode::kBitmap;
    h.index_bytes = static_cast<uint32_t>(use_varint ? varint_bytes : bitmap_size);
    const size_t vbytes = value_bytes(h.value_mode, h.count);
    const bool has_scale = h.value_mode == ValueMode::kLog8;
    payload.resize(kHeaderBytes + h.index_bytes + vbytes + (has_scale ? 4 : 0));
    write_header(h, payload);
    uint8_t* p = payload.data() + kHeaderBytes;
    if (h.index_bytes > 0) {
      PSRT_CUDA(cudaMemcpyAsync(p, use_varint ? static_cast<const void*>(varints) : static_cast<const void*>(bitmap), h.index_bytes,
                                cudaMemcpyDeviceToHost, stream));
    }
    if (vbytes > 0) {
      PSRT_CUDA(cudaMemcpyAsync(p + h.index_bytes, values, vbytes, cudaMemcpyDeviceToHost, stream));
    }
    PSRT_CUDA(cudaStreamSynchronize(stream));
    if (has_scale) put_f32(p + h.index_bytes + vbytes, host_s->scale);

    LadsResult r;
    r.rms = static_cast<float>(static_cast<double>(host_s->nrm) / std::sqrt(static_cast<double>(n)));
    r.threshold = host_s->tau;
    r.scale = host_s->scale;
    r.kept = static_cast<uint32_t>(k);
    remember(dx, n, k, params.quant_bits);
    return r;
  }

  void remember(const float* dx, size_t n, size_t k, int quant_bits) {
    last_x = dx;
    last_n = n;
    last_k = k;
    last_bits = quant_bits;
  }

  Status subtract_sent(float* dx, size_t n) {
    if (last_x == nullptr || dx != last_x || n != last_n) {
      return Status::error("cuda lads: subtract_sent without an encode of the same values");
    }
    last_x = nullptr;  // once: a second call would subtract twice
    if (last_k == 0) return Status::ok();
    subtract_sent_kernel<<<blocks_for(last_k), kThreads, 0, stream>>>(dx, indices, last_k, values,
                                                                      last_bits, s, mag);
    PSRT_CUDA(cudaGetLastError());
    return Status::ok();
  }
};

CudaLads::CudaLads(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CudaLads::~CudaLads() = default;

Result<std::unique_ptr<CudaLads>> CudaLads::create(size_t max_elements) {
  if (!device_available()) return Status::error("cuda lads: no CUDA device");
  if (max_elements == 0 || max_elements > std::numeric_limits<uint32_t>::max()) {
    return Status::error("cuda lads: max_elements must be in 1..2^32-1");
  }
  auto impl = std::make_unique<Impl>();
  if (Status s = impl->init(max_elements); !s) return s;
  return std::unique_ptr<CudaLads>(new CudaLads(std::move(impl)));
}

Result<LadsResult> CudaLads::encode_device(const float* d_values, size_t n,
                                           const LadsParams& params, const LogCodebook& book,
                                           std::vector<uint8_t>& payload) {
  return impl_->encode(d_values, n, params, book, payload);
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

namespace {

// Seconds per call of `rep` (which returns a Status), averaged over `reps` calls timed with events
// on `stream`. The events are released on every path.
template <typename Rep>
Result<double> seconds_per_rep(cudaStream_t stream, int reps, Rep&& rep) {
  struct Events {
    cudaEvent_t start = nullptr, stop = nullptr;
    ~Events() {
      if (start) cudaEventDestroy(start);
      if (stop) cudaEventDestroy(stop);
    }
  } ev;
  PSRT_CUDA(cudaEventCreate(&ev.start));
  PSRT_CUDA(cudaEventCreate(&ev.stop));
  PSRT_CUDA(cudaEventRecord(ev.start, stream));
  for (int r = 0; r < reps; ++r) {
    if (Status st = rep(); !st) return st;
  }
  PSRT_CUDA(cudaEventRecord(ev.stop, stream));
  PSRT_CUDA(cudaEventSynchronize(ev.stop));
  float ms = 0;
  PSRT_CUDA(cudaEventElapsedTime(&ms, ev.start, ev.stop));
  return ms / 1e3 / reps;
}

}  // namespace

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

Result<double> CudaLads::time_copy(size_t n, int reps) {
  if (n > impl_->cap) return Status::error("cuda lads: copy larger than the buffers");
  auto copy = [&]() -> Status {
    PSRT_CUDA(cudaMemcpyAsync(impl_->values, impl_->x, 4 * n, cudaMemcpyDeviceToDevice,
                              impl_->stream));
    return Status::ok();
  };
  if (Status st = copy(); !st) return st;  // warm
  return seconds_per_rep(impl_->stream, reps, copy);
}

}  // namespace psrt::compress::cuda
