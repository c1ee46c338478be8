#include "compress/cuda/device_laco.h"

#include <algorithm>
#include <cmath>
#include <string>

#include <cuda_runtime.h>

#include "compress/codec_util.h"
#include "compress/cuda/cuda_lads.h"
#include "compress/cuda/cuda_status.h"
#include "compress/payload_writer.h"

namespace psrt::compress::cuda {

namespace {

constexpr int kThreads = 256;
constexpr size_t kMaxBlocks = 4096;  // grid-stride beyond

// r += g, or r -= g (subtract: ErrorFeedback's best-effort undo after an error), in the same fp32
// operations as ErrorFeedback's host loops (__fadd_rn / __fsub_rn: round to nearest, no FTZ).
__global__ void add_kernel(float* r, const float* g, size_t n, bool subtract) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x) {
    r[i] = subtract ? __fsub_rn(r[i], g[i]) : __fadd_rn(r[i], g[i]);
  }
}

// u = m * u + g: ErrorFeedback's host pass (momentum_add_and_moments), in the same fp32
// operations (the host build has no FMA contraction: a product rounded, then a sum rounded).
__global__ void momentum_kernel(float* u, const float* g, size_t n, float m) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x) {
    u[i] = __fadd_rn(__fmul_rn(m, u[i]), g[i]);
  }
}

unsigned blocks_for(size_t n) {
  return static_cast<unsigned>(std::min((n + kThreads - 1) / kThreads, kMaxBlocks));
}

struct Tensor {
  std::unique_ptr<CodecState> state;  // LacoCodec's, on the host
  LacoState* laco = nullptr;          // the same state, as the codec's steps take it
  int64_t num_elements = 0;
  float* residual = nullptr;  // in Impl::residuals
  float* momentum = nullptr;  // in Impl::momenta (momentum correction only)
};

}  // namespace

struct DeviceLacoEncoder::Impl {
  explicit Impl(const CodecConfig& config)
      : codec(config), momentum(static_cast<float>(config.momentum)) {}
  ~Impl() {
    // Nothing is in flight between encodes (encode ends synchronised).
    if (residuals != nullptr) cudaFree(residuals);
    if (momenta != nullptr) cudaFree(momenta);
    if (ready != nullptr) cudaEventDestroy(ready);
  }

  LacoCodec codec;
  std::vector<Tensor> tensors;
  float* residuals = nullptr;      // every tensor's residual, one allocation
  float momentum = 0;              // momentum correction's factor (0: off)
  float* momenta = nullptr;        // every tensor's momentum u, one allocation (when on)
  std::unique_ptr<CudaLads> lads;  // sized to the longest chunk seen so far
  std::unique_ptr<CudaLads> batch_lads;  // encode_batch's: sized to the largest batch seen
  size_t batch_segments = 0;              // batch_lads' segment capacity
  cudaEvent_t ready = nullptr;     // marks the default stream's work before an encode
  std::vector<float> host;         // a chunk brought to the host (dense or re-check)

  Status init(std::span<const TensorInfo> infos) {
    size_t total = 0;
    for (const TensorInfo& info : infos) {
      if (info.num_elements < 0) return Status::error("laco (device): negative tensor size");
      total += static_cast<size_t>(info.num_elements);
    }
    PSRT_CUDA(cudaMalloc(&residuals, sizeof(float) * std::max<size_t>(total, 1)));
    // All-zero bytes: +0.0f, as ErrorFeedback's vector starts.
    PSRT_CUDA(cudaMemset(residuals, 0, sizeof(float) * std::max<size_t>(total, 1)));
    if (momentum > 0) {
      PSRT_CUDA(cudaMalloc(&momenta, sizeof(float) * std::max<size_t>(total, 1)));
      PSRT_CUDA(cudaMemset(momenta, 0, sizeof(float) * std::max<size_t>(total, 1)));
    }
    size_t at = 0;
    for (const TensorInfo& info : infos) {
      Tensor t;
      t.state = codec.make_state(info);
      t.laco = LacoCodec::laco_state(*t.state);
      t.num_elements = info.num_elements;
      t.residual = residuals + at;
      if (momenta != nullptr) t.momentum = momenta + at;
      at += static_cast<size_t>(info.num_elements);
      tensors.push_back(std::move(t));
    }
    PSRT_CUDA(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
    // The memset ran on the default stream; the encoder's stream does not wait for it by itself.
    PSRT_CUDA(cudaStreamSynchronize(cudaStreamLegacy));
    return Status::ok();
  }

  // CudaLads with buffers for chunks of n elements. Chunk lengths are known only as they come, so
  // it is re-made when a longer one comes: a few times, in the first iteration.
  Status reserve(size_t n) {
    if (lads != nullptr && lads->capacity() >= n) return Status::ok();
    lads.reset();  // nothing in flight: encode ends synchronised
    Result<std::unique_ptr<CudaLads>> made = CudaLads::create(std::max<size_t>(n, 1));
    if (!made) return made.status();
    lads = std::move(*made);
    return Status::ok();
  }

  Status reserve_batch(size_t elements, size_t segments) {
    if (batch_lads != nullptr && batch_lads->capacity() >= elements && batch_segments >= segments) {
      return Status::ok();
    }
    const size_t want_elements = std::max(elements, batch_lads ? batch_lads->capacity() : 1);
    const size_t want_segments = std::max(segments, batch_segments);
    batch_lads.reset();  // nothing in flight: encode_batch ends synchronised
    Result<std::unique_ptr<CudaLads>> made = CudaLads::create(want_elements, want_segments);
    if (!made) return made.status();
    batch_lads = std::move(*made);
    batch_segments = want_segments;
    return Status::ok();
  }

  Status encode_batch(std::span<const DeviceChunk> chunks,
                      std::vector<std::vector<uint8_t>>& payloads) {
    payloads.resize(chunks.size());
    for (const DeviceChunk& c : chunks) {
      if (c.key >= tensors.size()) {
        return Status::error("laco (device): no tensor " + std::to_string(c.key));
      }
      if (Status st = check_chunk(tensors[c.key].num_elements, c.offset, c.length, "laco (device)");
          !st) {
        return st;
      }
      if (c.grad == nullptr) return Status::error("laco (device): no gradient");
    }
    // Sparse chunks of tensors that appear once go in the batch; the others one by one, first.
    std::vector<size_t> batched;
    size_t elements = 0;
    for (size_t j = 0; j < chunks.size(); ++j) {
      const DeviceChunk& c = chunks[j];
      const LacoPlan plan = codec.plan(*tensors[c.key].laco, c.iteration);
      const auto same_key = std::count_if(chunks.begin(), chunks.end(),
                                          [&](const DeviceChunk& o) { return o.key == c.key; });
      if (c.length > 0 && !plan.dense && !plan.record && same_key == 1) {
        batched.push_back(j);
        elements += static_cast<size_t>(c.length);
        continue;
      }
      if (Status st = encode(c, payloads[j], nullptr); !st) return st;
    }
    if (batched.empty()) return Status::ok();
    if (Status st = reserve_batch(elements, batched.size()); !st) return st;
    cudaStream_t stream = batch_lads->stream();
    PSRT_CUDA(cudaEventRecord(ready, cudaStreamLegacy));
    PSRT_CUDA(cudaStreamWaitEvent(stream, ready, 0));
    std::vector<LadsBatchItem> items;
    std::vector<LadsParams> params;
    for (const size_t j : batched) {
      const DeviceChunk& c = chunks[j];
      Tensor& t = tensors[c.key];
      params.push_back(codec.lads_params(*t.laco, c.iteration));
      LadsBatchItem item;
      item.values = t.residual + c.offset;
      item.n = static_cast<size_t>(c.length);
      item.params = params.back();
      item.book = &codec.codebooks().get(item.params.log_range);
      item.g = c.grad + c.offset;
      item.u = t.momentum != nullptr ? t.momentum + c.offset : nullptr;
      item.mu = momentum;
      items.push_back(item);
    }
    std::vector<std::vector<uint8_t>> out;
    Result<std::vector<LadsResult>> sent = batch_lads->encode_batch(items, out);
    Status st = sent ? batch_lads->subtract_sent_batch() : sent.status();
    if (!st) {
      // As encode(): r -= what was added, best effort, the first error reported.
      for (const LadsBatchItem& item : items) {
        add_kernel<<<blocks_for(item.n), kThreads, 0, stream>>>(
            const_cast<float*>(item.values), item.u != nullptr ? item.u : item.g, item.n, true);
      }
      cudaStreamSynchronize(stream);
      return st;
    }
    for (size_t s = 0; s < batched.size(); ++s) {
      const DeviceChunk& c = chunks[batched[s]];
      payloads[batched[s]] = std::move(out[s]);
      codec.account_sparse(*tensors[c.key].laco, c.iteration, params[s], items[s].n,
                           (*sent)[s].kept, payloads[batched[s]].size());
    }
    PSRT_CUDA(cudaStreamSynchronize(stream));
    return Status::ok();
  }

  Status to_host(const float* r, size_t n) {
    host.resize(n);
    PSRT_CUDA(
        cudaMemcpyAsync(host.data(), r, sizeof(float) * n, cudaMemcpyDeviceToHost, lads->stream()));
    PSRT_CUDA(cudaStreamSynchronize(lads->stream()));
    return Status::ok();
  }

  Status encode(const DeviceChunk& c, std::vector<uint8_t>& payload, LadsResult* lads_out) {
    if (c.key >= tensors.size()) {
      return Status::error("laco (device): no tensor " + std::to_string(c.key));
    }
    Tensor& t = tensors[c.key];
    if (Status st = check_chunk(t.num_elements, c.offset, c.length, "laco (device)"); !st) {
      return st;
    }
    if (c.grad == nullptr) return Status::error("laco (device): no gradient");
    const auto n = static_cast<size_t>(c.length);
    if (Status st = reserve(n); !st) return st;
    cudaStream_t stream = lads->stream();
    float* r = t.residual + c.offset;
    const float* g = c.grad + c.offset;
    float* u = t.momentum != nullptr ? t.momentum + c.offset : nullptr;
    const LacoPlan plan = codec.plan(*t.laco, c.iteration);
    // A sparse chunk whose values the host needs not see: r += g (with momentum, u = m*u + g and
    // r += u) is done by CudaLads' first pass, which reads r for the RMS anyway.
    const bool fused = n > 0 && !plan.dense && !plan.record;
    if (n > 0) {
      // The encoder's stream is non-blocking: make it wait for the gradient's producer on the
      // default stream (the GPU engine's).
      PSRT_CUDA(cudaEventRecord(ready, cudaStreamLegacy));
      PSRT_CUDA(cudaStreamWaitEvent(stream, ready, 0));
    }
    if (n > 0 && !fused) {
      if (u != nullptr) {
        momentum_kernel<<<blocks_for(n), kThreads, 0, stream>>>(u, g, n, momentum);
        PSRT_CUDA(cudaGetLastError());
      }
      add_kernel<<<blocks_for(n), kThreads, 0, stream>>>(r, u != nullptr ? u : g, n, false);
      PSRT_CUDA(cudaGetLastError());
    }
    Status st = fused ? encode_fused(t, r, g, u, n, c.iteration, payload, lads_out)
                      : encode_corrected(t, plan, r, n, c.iteration, payload, lads_out);
    if (!st) {
      if (n > 0) {
        // Best effort, as ErrorFeedback: leave the residual as it was (r -= what was added; u
        // stays, as on the CPU). The first error is the one reported, so these calls' own
        // failures are not. (The fused path fails only after its pass has updated r.)
        add_kernel<<<blocks_for(n), kThreads, 0, stream>>>(r, u != nullptr ? u : g, n, true);
        cudaStreamSynchronize(stream);
      }
      return st;
    }
    // Nothing stays in flight: the caller may reuse the gradient, and a failure of the queued
    // residual update is reported by this call.
    PSRT_CUDA(cudaStreamSynchronize(stream));
    return Status::ok();
  }

  // A sparse chunk in one CudaLads call from the gradient: r += g (or the momentum step) fused
  // into its first pass, then ErrorFeedback's r -= sent.
  Status encode_fused(Tensor& t, float* r, const float* g, float* u, size_t n, int64_t iteration,
                      std::vector<uint8_t>& payload, LadsResult* lads_out) {
    const LadsParams params = codec.lads_params(*t.laco, iteration);
    Result<LadsResult> sent = lads->encode_update(r, g, u, momentum, n, params,
                                                  codec.codebooks().get(params.log_range), payload);
    if (!sent) return sent.status();
    if (Status st = lads->subtract_sent(r, n); !st) return st;
    codec.account_sparse(*t.laco, iteration, params, n, sent->kept, payload.size());
    if (lads_out != nullptr) *lads_out = *sent;
    return Status::ok();
  }

  // The steps of LacoCodec::encode on the corrected chunk r, plus ErrorFeedback's r -= sent.
  Status encode_corrected(Tensor& t, const LacoPlan& plan, float* r, size_t n, int64_t iteration,
                          std::vector<uint8_t>& payload, LadsResult* lads_out) {
    // The values come to the host only for a dense payload (calibration iterations and tensors
    // under dense_below: the payload is the values) and at re-checks (the histogram: once per
    // warm-up stage, then every recheck_every iterations).
    if (plan.dense || plan.record) {
      if (Status st = to_host(r, n); !st) return st;
    }
    if (plan.record) {
      if (Status st = codec.record(*t.laco, iteration, host); !st) return st;
    }
    if (plan.dense) {
      // The CPU finds a NaN or an infinity when it decodes what it sent (accumulate_sent).
      if (!std::all_of(host.begin(), host.end(), [](float v) { return std::isfinite(v); })) {
        return Status::error("laco: gradient chunk holds a NaN or an infinity");
      }
      write_dense_fp32(CodecId::kLaco, host, payload);
      // What the CPU leaves after a dense payload, r + -1 * r, is +0.0 for every finite r (for
      // r = -0.0 too: -0.0 + +0.0 is +0.0 when rounding to nearest): all-zero bytes.
      PSRT_CUDA(cudaMemsetAsync(r, 0, sizeof(float) * n, lads->stream()));
      codec.account_dense(*t.laco, n, payload.size());
      return Status::ok();
    }
    const LadsParams params = codec.lads_params(*t.laco, iteration);
    Result<LadsResult> sent =
        lads->encode_device(r, n, params, codec.codebooks().get(params.log_range), payload);
    if (!sent) return sent.status();
    if (Status st = lads->subtract_sent(r, n); !st) return st;
    codec.account_sparse(*t.laco, iteration, params, n, sent->kept, payload.size());
    if (lads_out != nullptr) *lads_out = *sent;
    return Status::ok();
  }
};

DeviceLacoEncoder::DeviceLacoEncoder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DeviceLacoEncoder::~DeviceLacoEncoder() = default;

Result<std::unique_ptr<DeviceLacoEncoder>> DeviceLacoEncoder::create(
    const CodecConfig& config, std::span<const TensorInfo> tensors) {
  if (config.codec != "laco") {
    return Status::error("laco (device): codec is \"" + config.codec + "\", not \"laco\"");
  }
  if (Status st = validate(config); !st) return st;
  if (config.momentum_masking) {
    return Status::error("laco (device): momentum masking runs on the host only");
  }
  if (config.quant_bits == 1) {
    return Status::error("laco (device): quant_bits 1 (ternary values) runs on the host only");
  }
  if (!device_available()) return Status::error("laco (device): no CUDA device");
  auto impl = std::make_unique<Impl>(config);
  if (Status st = impl->init(tensors); !st) return st;
  return std::unique_ptr<DeviceLacoEncoder>(new DeviceLacoEncoder(std::move(impl)));
}

Status DeviceLacoEncoder::encode(const DeviceChunk& chunk, std::vector<uint8_t>& payload,
                                 LadsResult* lads) {
  return impl_->encode(chunk, payload, lads);
}

Status DeviceLacoEncoder::encode_batch(std::span<const DeviceChunk> chunks,
                                       std::vector<std::vector<uint8_t>>& payloads) {
  return impl_->encode_batch(chunks, payloads);
}

EncodeStats DeviceLacoEncoder::stats(size_t key) const {
  if (key >= impl_->tensors.size()) return {};
  return impl_->codec.stats(*impl_->tensors[key].state);
}

Result<std::vector<float>> DeviceLacoEncoder::residual(size_t key) const {
  if (key >= impl_->tensors.size()) {
    return Status::error("laco (device): no tensor " + std::to_string(key));
  }
  const Tensor& t = impl_->tensors[key];
  std::vector<float> out(static_cast<size_t>(t.num_elements));
  PSRT_CUDA(cudaMemcpy(out.data(), t.residual, sizeof(float) * out.size(), cudaMemcpyDeviceToHost));
  return out;
}

Result<std::vector<float>> DeviceLacoEncoder::momentum_buffer(size_t key) const {
  if (key >= impl_->tensors.size()) {
    return Status::error("laco (device): no tensor " + std::to_string(key));
  }
  const Tensor& t = impl_->tensors[key];
  std::vector<float> out(static_cast<size_t>(t.num_elements), 0.0f);
  if (t.momentum != nullptr) {
    PSRT_CUDA(
        cudaMemcpy(out.data(), t.momentum, sizeof(float) * out.size(), cudaMemcpyDeviceToHost));
  }
  return out;
}

const LacoCodec& DeviceLacoEncoder::codec() const {
  return impl_->codec;
}

}  // namespace psrt::compress::cuda
