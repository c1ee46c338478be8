// The CUDA LADS path against the CPU reference on seeded input: payloads equal byte for byte.
// [gpu]: skipped without a device.
#include <catch2/catch.hpp>

#include <cmath>
#include <iterator>

#include <cuda_runtime.h>

#include "compress/cuda/cuda_lads.h"
#include "compress/lads.h"
#include "compress/laco_codec.h"
#include "compress/wire_format.h"
#include "test_util.h"

namespace psrt::compress {

TEST_CASE("CUDA LADS gives the CPU's payload, bit for bit", "[gpu][compress]") {
  if (!cuda::device_available()) {
    WARN("SKIPPED: no CUDA device");
    return;
  }
  // Sizes around every boundary of the kernels: the moments' lanes, blocks, groups (32768) and
  // super groups (2,097,152), the select pass's tiles (4096) and bitmap words (32).
  const size_t sizes[] = {1,     7,     8,         31,        33,         1000,
                          4095,  4096,  4097,      32768 + 9, 65537,      size_t{1} << 20,
                          (size_t{1} << 21) + 32768 * 3 + 1024 + 13};
  Result<std::unique_ptr<cuda::CudaLads>> gpu = cuda::CudaLads::create(sizes[12]);
  REQUIRE(gpu.is_ok());
  const LacoCodec codec(testing::config_for("laco", false));
  for (size_t n : sizes) {
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
        CHECK(c->rms == d->rms);
        CHECK(c->threshold == d->threshold);
        CHECK(c->kept == d->kept);
        CHECK(cpu_payload == gpu_payload);
      }
    }
  }
}

TEST_CASE("CUDA LADS encodes a batch of chunks in one launch sequence, each as the CPU does",
          "[gpu][compress]") {
  if (!cuda::device_available()) {
    WARN("SKIPPED: no CUDA device");
    return;
  }
  // Small and large, empty, different settings and ranges side by side in one batch.
  const size_t sizes[] = {1, 0, 9, 4096, 4097, 100000, 3, 32768 * 2 + 8, 250, 1 << 18};
  std::vector<std::vector<float>> chunks;
  size_t total = 0;
  for (size_t j = 0; j < std::size(sizes); ++j) {
    chunks.push_back(testing::gaussian(sizes[j], 1000 + j, j % 2 == 0 ? 1.0f : 1e-3f));
    total += sizes[j];
  }
  Result<std::unique_ptr<cuda::CudaLads>> gpu = cuda::CudaLads::create(total, std::size(sizes));
  REQUIRE(gpu.is_ok());
  // The chunks side by side in one device buffer, as a model's gradients are.
  float* dev = nullptr;
  REQUIRE(cudaMalloc(&dev, 4 * total) == cudaSuccess);
  const LacoCodec codec(testing::config_for("laco", false));
  std::vector<cuda::LadsBatchItem> items;
  std::vector<LadsParams> params;
  size_t at = 0;
  for (size_t j = 0; j < chunks.size(); ++j) {
    REQUIRE(cudaMemcpy(dev + at, chunks[j].data(), 4 * chunks[j].size(), cudaMemcpyHostToDevice) ==
            cudaSuccess);
    params.push_back(LadsParams{.alpha = j % 3 == 0 ? 2.576f : 1.0f,
                                .quant_bits = j % 4 == 3 ? 32 : 8,
                                .log_range = j % 2 == 0 ? 12 : 20});
    items.push_back(
        {dev + at, chunks[j].size(), params[j], &codec.codebooks().get(params[j].log_range)});
    at += chunks[j].size();
  }
  for (int round = 0; round < 2; ++round) {  // twice: the counters and tile states start over
    std::vector<std::vector<uint8_t>> payloads;
    Result<std::vector<LadsResult>> got = (*gpu)->encode_batch(items, payloads);
    REQUIRE(got.is_ok());
    REQUIRE(payloads.size() == chunks.size());
    for (size_t j = 0; j < chunks.size(); ++j) {
      INFO("round " << round << " chunk " << j << " of " << chunks[j].size());
      LadsScratch scratch;
      std::vector<uint8_t> want;
      Result<LadsResult> c = lads_encode(chunks[j], params[j], *items[j].book, scratch, want);
      REQUIRE(c.is_ok());
      CHECK(payloads[j] == want);
      CHECK((*got)[j].rms == c->rms);
      CHECK((*got)[j].kept == c->kept);
    }
  }
  // A NaN anywhere fails the batch.
  const float nan = NAN;
  REQUIRE(cudaMemcpy(dev + total - 1, &nan, 4, cudaMemcpyHostToDevice) == cudaSuccess);
  std::vector<std::vector<uint8_t>> payloads;
  CHECK_FALSE((*gpu)->encode_batch(items, payloads).is_ok());
  cudaFree(dev);
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
