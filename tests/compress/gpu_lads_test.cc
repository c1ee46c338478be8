// The CUDA LADS path against the CPU reference on seeded input. [gpu]: skipped without a device.
#include <catch2/catch.hpp>

#include <cmath>

#include "compress/cuda/cuda_lads.h"
#include "compress/lads.h"
#include "compress/laco_codec.h"
#include "compress/wire_format.h"
#include "test_util.h"

namespace psrt::compress {

namespace {

// Decoded payloads must agree exactly, except for elements whose |g| lies within a relative
// 1e-5 of the threshold (the RMS comes from cuBLAS on the GPU, from fp32 lanes summed in double on
// the CPU).
void expect_same(const std::vector<float>& g, const std::vector<uint8_t>& cpu,
                 const std::vector<uint8_t>& gpu, float threshold, const Codec& codec) {
  if (cpu == gpu) return;
  std::vector<float> a(g.size()), b(g.size());
  REQUIRE(codec.decode(cpu, a).is_ok());
  REQUIRE(codec.decode(gpu, b).is_ok());
  size_t near = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    if (a[i] == b[i]) continue;
    INFO("element " << i << " g " << g[i] << " threshold " << threshold);
    REQUIRE((a[i] == 0.0f || b[i] == 0.0f));
    REQUIRE(std::fabs(std::fabs(g[i]) - threshold) <= 1e-5f * threshold);
    ++near;
  }
  WARN("CPU and GPU payloads differ at " << near << " near-threshold elements");
}

}  // namespace

TEST_CASE("CUDA LADS gives the CPU's payload", "[gpu][compress]") {
  if (!cuda::device_available()) {
    WARN("SKIPPED: no CUDA device");
    return;
  }
  Result<std::unique_ptr<cuda::CudaLads>> gpu = cuda::CudaLads::create(1 << 20);
  REQUIRE(gpu.is_ok());
  const LacoCodec codec(testing::config_for("laco", false));
  for (size_t n : {size_t{1}, size_t{31}, size_t{1000}, size_t{65537}, size_t{1} << 20}) {
    for (float alpha : {0.3f, 2.576f, 3.3f}) {
      for (int bits : {8, 32}) {
        INFO("n " << n << " alpha " << alpha << " bits " << bits);
        const auto g = testing::gaussian(n, n * 31 + static_cast<uint64_t>(alpha * 100) +
                                                static_cast<uint64_t>(bits));
        const LadsParams params{.alpha = alpha, .quant_bits = bits, .log_range = 12};
        const LogCodebook& book = codec.codebooks().get(12);
        LadsScratch scratch;
        std::vector<uint8_t> cpu_payload, gpu_payload;
        Result<LadsResult> c = lads_encode(g, params, book, scratch, cpu_payload);
        Result<LadsResult> d = (*gpu)->encode_host(g, params, book, gpu_payload);
        REQUIRE(c.is_ok());
        REQUIRE(d.is_ok());
        CHECK(c->scale == d->scale);
        CHECK(c->rms == Approx(d->rms).epsilon(1e-5));
        expect_same(g, cpu_payload, gpu_payload, c->threshold, codec);
      }
    }
  }
}

TEST_CASE("CUDA LADS rejects NaN and oversize chunks", "[gpu][compress]") {
  if (!cuda::device_available()) {
    WARN("SKIPPED: no CUDA device");
    return;
  }
  Result<std::unique_ptr<cuda::CudaLads>> gpu = cuda::CudaLads::create(4096);
  REQUIRE(gpu.is_ok());
  const LogCodebook book(12);
  std::vector<uint8_t> payload;
  auto g = testing::gaussian(4096, 3);
  g[100] = NAN;
  CHECK_FALSE((*gpu)->encode_host(g, LadsParams{.alpha = 2.0f}, book, payload).is_ok());
  const auto big = testing::gaussian(5000, 4);
  CHECK_FALSE((*gpu)->encode_host(big, LadsParams{.alpha = 2.0f}, book, payload).is_ok());
}

TEST_CASE("without a device, create() says so instead of failing later", "[gpu][compress]") {
  if (cuda::device_available()) {
    CHECK(cuda::CudaLads::create(16).is_ok());
  } else {
    Result<std::unique_ptr<cuda::CudaLads>> r = cuda::CudaLads::create(16);
    REQUIRE_FALSE(r.is_ok());
    CHECK_THAT(r.status().message(), Catch::Contains("no CUDA device"));
  }
}

}  // namespace psrt::compress
