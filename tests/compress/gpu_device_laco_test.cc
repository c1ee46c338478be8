// DeviceLacoEncoder (LACO with error feedback on the GPU) against the CPU's
// ErrorFeedback(LacoCodec), side by side on seeded Gaussian gradients through calibration, warm-up
// and re-checks. [gpu]: skipped without a device.
//
// How it compares: per chunk, the payloads must be byte-identical, and per tensor and iteration
// the residuals (bit patterns: +0.0 and -0.0 differ) and the stats. CudaLads sums the squares in
// the CPU's order (moments.h), so no difference is allowed any more (the old cuBLAS RMS let an
// element within a relative 1e-5 of the threshold fall on either side): a differing chunk is still
// checked element by element, to say where, and then fails the test. The device run is also checked
// against itself: sent + new residual == old residual + gradient, bit for bit, each step. With
// momentum correction the same, the gradient being the momentum u = m*u + g, and u must match the
// CPU's bit for bit throughout. Sparse chunks take CudaLads' fused path (r += g in its first pass).
#include <catch2/catch.hpp>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "compress/cuda/cuda_lads.h"
#include "compress/cuda/device_laco.h"
#include "compress/error_feedback.h"
#include "compress/laco_codec.h"
#include "test_util.h"

namespace psrt::compress {

namespace {

// A device copy of a host vector, freed at scope exit.
class DeviceVector {
 public:
  explicit DeviceVector(size_t n) : n_(n) { REQUIRE(cudaMalloc(&p_, 4 * n + 4) == cudaSuccess); }
  ~DeviceVector() { cudaFree(p_); }
  DeviceVector(const DeviceVector&) = delete;
  DeviceVector& operator=(const DeviceVector&) = delete;
  void upload(const std::vector<float>& v) {
    REQUIRE(v.size() == n_);
    REQUIRE(cudaMemcpy(p_, v.data(), 4 * n_, cudaMemcpyHostToDevice) == cudaSuccess);
  }
  const float* get() const { return p_; }

 private:
  float* p_ = nullptr;
  size_t n_;
};

struct Spec {
  int64_t n;
  int64_t chunk;  // elements per chunk; the last one takes the rest
  float sigma;
};

std::vector<float> residual_of(cuda::DeviceLacoEncoder& gpu, size_t key) {
  Result<std::vector<float>> r = gpu.residual(key);
  REQUIRE(r.is_ok());
  return std::move(*r);
}

std::vector<float> momentum_of(cuda::DeviceLacoEncoder& gpu, size_t key) {
  Result<std::vector<float>> u = gpu.momentum_buffer(key);
  REQUIRE(u.is_ok());
  return std::move(*u);
}

// The CPU state's residual.
std::span<const float> cpu_residual(const CodecState& state, bool /*momentum*/) {
  return ErrorFeedback::residual(state);
}

bool same_bits(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size_bytes()) == 0;
}

// Payloads that differ must differ only at elements kept on one side, whose |value| lies within a
// relative 1e-5 of the device's threshold.
void expect_near_threshold(const Codec& codec, std::span<const float> corrected,
                           const std::vector<uint8_t>& cpu, const std::vector<uint8_t>& gpu,
                           float threshold) {
  std::vector<float> a(corrected.size()), b(corrected.size());
  REQUIRE(codec.decode(cpu, a).is_ok());
  REQUIRE(codec.decode(gpu, b).is_ok());
  for (size_t i = 0; i < corrected.size(); ++i) {
    if (a[i] == b[i]) continue;
    INFO("element " << i << " value " << corrected[i] << " threshold " << threshold);
    REQUIRE((a[i] == 0.0f || b[i] == 0.0f));
    REQUIRE(std::fabs(std::fabs(corrected[i]) - threshold) <= 1e-5f * threshold);
  }
}

CodecConfig side_by_side_config(int quant_bits, float momentum) {
  CodecConfig c = testing::config_for("laco");  // with error feedback
  c.quant_bits = quant_bits;
  c.momentum = momentum;  // momentum correction when > 0 (without masking)
  c.calibration_iters = 3;  // 0..2 dense
  c.warmup_iters = 10;      // 3..12: five stages, each re-checked at its start
  c.recheck_every = 25;     // then re-checks at 13 and 38
  c.dense_below = 1024;
  c.density = 0.01;
  return c;
}

// The CPU codec and the device encoder fed the same gradients, tensor by tensor.
class SideBySide {
 public:
  SideBySide(int quant_bits, float momentum)
      : quant_bits_(quant_bits), momentum_(momentum), mc_(momentum > 0) {
    const CodecConfig c = side_by_side_config(quant_bits, momentum);
    const int num_layers = static_cast<int>(specs_.size());
    std::vector<TensorInfo> infos;
    for (int k = 0; k < num_layers; ++k) {
      infos.push_back({.num_elements = specs_[k].n, .layer = k, .num_layers = num_layers});
    }
    cpu_ = testing::make(c);
    REQUIRE(cpu_ != nullptr);
    for (const TensorInfo& info : infos) cpu_states_.push_back(cpu_->make_state(info));
    Result<std::unique_ptr<cuda::DeviceLacoEncoder>> made =
        cuda::DeviceLacoEncoder::create(c, infos);
    REQUIRE(made.is_ok());
    gpu_ = std::move(*made);
  }

  void run() {
    for (int64_t t = 0; t < 40; ++t) {
      for (int k = static_cast<int>(specs_.size()) - 1; k >= 0; --k) step(t, k);  // backward order
    }
    if (mc_) {
      for (size_t k = 0; k < specs_.size(); ++k) {
        REQUIRE(same_bits(momentum_of(*gpu_, k), ErrorFeedback::momentum_buffer(*cpu_states_[k])));
      }
    }
    INFO("bits " << quant_bits_ << " momentum " << momentum_ << ": " << near_
                 << " chunk(s) differed at near-threshold elements");
    CHECK(near_ == 0);
    CHECK(identical_ >= 40 * 16 / 2);
  }

 private:
  void step(int64_t t, int k) {
    INFO("bits " << quant_bits_ << " momentum " << momentum_ << " iteration " << t << " tensor "
                 << k);
    const Spec& spec = specs_[k];
    const auto n = static_cast<size_t>(spec.n);
    const uint64_t seed = 1000 * static_cast<uint64_t>(t) + static_cast<uint64_t>(k) +
                          100000 * static_cast<uint64_t>(quant_bits_);
    std::vector<float> g = testing::gaussian(n, seed, spec.sigma);
    if (t % 7 == 0) {
      for (size_t i = 0; i < n; i += 97) g[i] = -0.0f;  // signed zeros through both paths
    }
    // What the residual takes: g, or with momentum correction u = m*u + g (alike on both sides).
    std::vector<float> added = g;
    if (mc_) {
      const std::vector<float> u = momentum_of(*gpu_, static_cast<size_t>(k));
      REQUIRE(same_bits(u, ErrorFeedback::momentum_buffer(*cpu_states_[k])));
      for (size_t i = 0; i < n; ++i) added[i] = momentum_ * u[i] + g[i];
    }
    const std::vector<float> gpu_before = residual_of(*gpu_, static_cast<size_t>(k));
    std::vector<float> gpu_corrected(n), gpu_sent(n, 0.0f);
    for (size_t i = 0; i < n; ++i) gpu_corrected[i] = gpu_before[i] + added[i];
    const std::span<const float> cpu_before = cpu_residual(*cpu_states_[k], mc_);
    std::vector<float> cpu_corrected(n);
    for (size_t i = 0; i < n; ++i) cpu_corrected[i] = cpu_before[i] + added[i];
    encode_chunks(t, k, g, cpu_corrected, gpu_sent);
    check_residuals(k, gpu_sent, gpu_corrected);
  }

  // Every chunk of tensor k through both encoders; the device's payloads decoded into `sent`.
  void encode_chunks(int64_t t, int k, const std::vector<float>& g,
                     const std::vector<float>& cpu_corrected, std::vector<float>& sent) {
    const Spec& spec = specs_[k];
    DeviceVector d_grad(g.size());
    d_grad.upload(g);
    for (int64_t off = 0; off < spec.n; off += spec.chunk) {
      const int64_t len = std::min(spec.chunk, spec.n - off);
      const auto o = static_cast<size_t>(off), l = static_cast<size_t>(len);
      ChunkInput in{
          .offset = off, .values = std::span<const float>(g).subspan(o, l), .iteration = t};
      REQUIRE(cpu_->encode(*cpu_states_[k], in, cpu_payload_).is_ok());
      LadsResult lads;
      lads.threshold = NAN;
      const cuda::DeviceChunk chunk{.key = static_cast<size_t>(k),
                                    .offset = off,
                                    .length = len,
                                    .grad = d_grad.get(),
                                    .iteration = t};
      REQUIRE(gpu_->encode(chunk, gpu_payload_, &lads).is_ok());
      REQUIRE(cpu_->decode(gpu_payload_, std::span<float>(sent).subspan(o, l)).is_ok());
      if (diverged_[k]) continue;
      if (cpu_payload_ == gpu_payload_) {
        ++identical_;
        continue;
      }
      REQUIRE(!std::isnan(lads.threshold));  // only LADS' threshold may differ: not dense
      expect_near_threshold(*cpu_, std::span<const float>(cpu_corrected).subspan(o, l),
                            cpu_payload_, gpu_payload_, lads.threshold);
      ++near_;
      diverged_[k] = true;
    }
  }

  // The device run against itself: what was sent plus the new residual is the corrected
  // gradient, bit for bit; and, until a chunk differed, against the CPU.
  void check_residuals(int k, const std::vector<float>& sent,
                       const std::vector<float>& gpu_corrected) {
    const std::vector<float> gpu_after = residual_of(*gpu_, static_cast<size_t>(k));
    for (size_t i = 0; i < sent.size(); ++i) {
      if (sent[i] + gpu_after[i] != gpu_corrected[i]) {
        FAIL("element " << i << ": sent " << sent[i] << " + residual " << gpu_after[i]
                        << " != " << gpu_corrected[i]);
      }
    }
    const EncodeStats cs = cpu_->stats(*cpu_states_[k]);
    const EncodeStats gs = gpu_->stats(static_cast<size_t>(k));
    CHECK(gs.elements == cs.elements);
    if (!diverged_[k]) {
      // The same residual as the CPU's, bit for bit, and the same counters.
      REQUIRE(same_bits(gpu_after, cpu_residual(*cpu_states_[k], mc_)));
      CHECK(gs.sent == cs.sent);
      CHECK(gs.bytes == cs.bytes);
    }
  }

  const int quant_bits_;
  const float momentum_;
  const bool mc_;
  const std::vector<Spec> specs_ = {
      {600, 256, 1.0f},          // dense_below: always dense, chunks at 0, 256, 512
      {5000, 5000, 1.0f},        // one chunk
      {70001, 30000, 1e-3f},     // small values, a short last chunk
      {300007, 65536, 1.0f},     // five chunks
      {1 << 20, 1 << 18, 4.0f},  // four full chunks
  };
  std::unique_ptr<Codec> cpu_;
  std::vector<std::unique_ptr<CodecState>> cpu_states_;
  std::unique_ptr<cuda::DeviceLacoEncoder> gpu_;
  std::vector<bool> diverged_ = std::vector<bool>(specs_.size(), false);
  int identical_ = 0, near_ = 0;
  std::vector<uint8_t> cpu_payload_, gpu_payload_;
};

}  // namespace

TEST_CASE("LACO with error feedback on the device gives the CPU's payloads and residuals",
          "[gpu][compress]") {
  if (!cuda::device_available()) {
    WARN("SKIPPED: no CUDA device");
    return;
  }
  for (int bits : {8, 32}) SideBySide(bits, 0.0f).run();
}

TEST_CASE("with momentum correction too: the device keeps u = m*u + g as the CPU does",
          "[gpu][compress]") {
  if (!cuda::device_available()) {
    WARN("SKIPPED: no CUDA device");
    return;
  }
  SideBySide(8, 0.9f).run();
  CodecConfig masking = testing::config_for("laco");
  masking.momentum = 0.9;
  masking.momentum_masking = true;
  const std::vector<TensorInfo> one = {{.num_elements = 10}};
  Result<std::unique_ptr<cuda::DeviceLacoEncoder>> refused =
      cuda::DeviceLacoEncoder::create(masking, one);
  REQUIRE_FALSE(refused.is_ok());
  CHECK_THAT(refused.status().message(), Catch::Contains("masking"));
}

TEST_CASE("encode_batch gives what encode gives chunk by chunk: payloads, residuals, momentum",
          "[gpu][compress]") {
  if (!cuda::device_available()) {
    WARN("SKIPPED: no CUDA device");
    return;
  }
  for (const float momentum : {0.0f, 0.9f}) {
    CodecConfig c = testing::config_for("laco");
    c.momentum = momentum;
    c.calibration_iters = 2;
    c.warmup_iters = 6;
    c.recheck_every = 9;
    c.dense_below = 512;
    c.density = 0.02;
    // A layer's weight and bias, a dense_below tensor, and one in two chunks (encoded one by one).
    const std::vector<Spec> specs = {{300, 300, 1.0f}, {9000, 9000, 1.0f}, {64, 64, 1.0f},
                                     {50000, 25000, 0.01f}, {4097, 4097, 3.0f}};
    std::vector<TensorInfo> infos;
    for (size_t k = 0; k < specs.size(); ++k) {
      infos.push_back({.num_elements = specs[k].n, .layer = static_cast<int>(k),
                       .num_layers = static_cast<int>(specs.size())});
    }
    auto one = cuda::DeviceLacoEncoder::create(c, infos);
    auto batch = cuda::DeviceLacoEncoder::create(c, infos);
    REQUIRE(one.is_ok());
    REQUIRE(batch.is_ok());
    for (int64_t t = 0; t < 20; ++t) {
      INFO("momentum " << momentum << " iteration " << t);
      std::vector<std::unique_ptr<DeviceVector>> grads;
      std::vector<cuda::DeviceChunk> chunks;
      for (size_t k = 0; k < specs.size(); ++k) {
        const auto n = static_cast<size_t>(specs[k].n);
        grads.push_back(std::make_unique<DeviceVector>(n));
        grads.back()->upload(
            testing::gaussian(n, 77 * static_cast<uint64_t>(t) + k, specs[k].sigma));
        for (int64_t off = 0; off < specs[k].n; off += specs[k].chunk) {
          chunks.push_back({.key = k,
                            .offset = off,
                            .length = std::min(specs[k].chunk, specs[k].n - off),
                            .grad = grads.back()->get(),
                            .iteration = t});
        }
      }
      std::vector<std::vector<uint8_t>> batched;
      REQUIRE((*batch)->encode_batch(chunks, batched).is_ok());
      REQUIRE(batched.size() == chunks.size());
      for (size_t j = 0; j < chunks.size(); ++j) {
        std::vector<uint8_t> single;
        REQUIRE((*one)->encode(chunks[j], single).is_ok());
        INFO("chunk " << j << " of tensor " << chunks[j].key);
        CHECK(single == batched[j]);
      }
      for (size_t k = 0; k < specs.size(); ++k) {
        REQUIRE(same_bits(residual_of(**one, k), residual_of(**batch, k)));
        REQUIRE(same_bits(momentum_of(**one, k), momentum_of(**batch, k)));
        CHECK((*one)->stats(k).sent == (*batch)->stats(k).sent);
      }
    }
  }
}

TEST_CASE("the device LACO encoder rejects bad chunks and NaN", "[gpu][compress]") {
  if (!cuda::device_available()) {
    WARN("SKIPPED: no CUDA device");
    return;
  }
  CodecConfig c = testing::config_for("laco");
  c.calibration_iters = 1;
  c.warmup_iters = 0;
  const std::vector<TensorInfo> infos = {{.num_elements = 4096}};
  Result<std::unique_ptr<cuda::DeviceLacoEncoder>> made = cuda::DeviceLacoEncoder::create(c, infos);
  REQUIRE(made.is_ok());
  cuda::DeviceLacoEncoder& gpu = **made;
  auto g = testing::gaussian(4096, 5);
  DeviceVector d_grad(4096);
  d_grad.upload(g);
  std::vector<uint8_t> payload;
  const cuda::DeviceChunk whole{.key = 0, .offset = 0, .length = 4096, .grad = d_grad.get()};
  REQUIRE(gpu.encode(whole, payload).is_ok());  // calibration

  cuda::DeviceChunk outside = whole;
  outside.offset = 1;
  CHECK_FALSE(gpu.encode(outside, payload).is_ok());
  cuda::DeviceChunk no_tensor = whole;
  no_tensor.key = 1;
  CHECK_FALSE(gpu.encode(no_tensor, payload).is_ok());

  const std::vector<float> before = residual_of(gpu, 0);
  g[100] = NAN;
  d_grad.upload(g);
  cuda::DeviceChunk sparse = whole;
  sparse.iteration = 5;
  CHECK_FALSE(gpu.encode(sparse, payload).is_ok());
  // The calibration left a zero residual, so taking the gradient back out restores it exactly
  // (0 + g - g == 0) except at the NaN.
  const std::vector<float> after = residual_of(gpu, 0);
  for (size_t i = 0; i < after.size(); ++i) {
    if (i != 100) REQUIRE(after[i] == before[i]);
  }
  g[100] = 0.0f;
  d_grad.upload(g);
  // The NaN stays in the residual (as on the CPU), so the next encode of this tensor fails too.
  CHECK_FALSE(gpu.encode(sparse, payload).is_ok());
  CHECK(gpu.stats(0).elements == 4096);
}

TEST_CASE("without a device, the device LACO encoder says so", "[gpu][compress]") {
  const std::vector<TensorInfo> infos = {{.num_elements = 16}};
  Result<std::unique_ptr<cuda::DeviceLacoEncoder>> made =
      cuda::DeviceLacoEncoder::create(testing::config_for("laco"), infos);
  if (cuda::device_available()) {
    CHECK(made.is_ok());
  } else {
    REQUIRE_FALSE(made.is_ok());
    CHECK_THAT(made.status().message(), Catch::Contains("no CUDA device"));
  }
  CodecConfig topk = testing::config_for("topk");
  CHECK_FALSE(cuda::DeviceLacoEncoder::create(topk, infos).is_ok());
  // Ternary values are encoded on the host only: refused with or without a device.
  CodecConfig ternary = testing::config_for("laco");
  ternary.quant_bits = 1;
  Result<std::unique_ptr<cuda::DeviceLacoEncoder>> refused =
      cuda::DeviceLacoEncoder::create(ternary, infos);
  REQUIRE_FALSE(refused.is_ok());
  CHECK_THAT(refused.status().message(), Catch::Contains("quant_bits 1"));
}

}  // namespace psrt::compress
