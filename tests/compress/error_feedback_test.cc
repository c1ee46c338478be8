// Residual conservation: what was sent plus the residual equals the accumulated gradient.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>

#include "compress/error_feedback.h"
#include "test_util.h"

namespace psrt::compress {

namespace {

// Integer-valued gradients: every sum below is exact in fp32, so conservation over many
// iterations can be checked bit for bit.
std::vector<float> integer_gradient(size_t n, std::mt19937& rng) {
  std::uniform_int_distribution<int> d(-1000, 1000);
  std::vector<float> g(n);
  for (float& x : g) x = static_cast<float>(d(rng));
  return g;
}

}  // namespace

TEST_CASE("each step: sent + new residual == old residual + gradient, bit for bit",
          "[compress][ef]") {
  const size_t n = 20000;
  for (const char* name : {"laco", "topk", "graddrop"}) {
    INFO(name);
    CodecConfig c = testing::config_for(name);
    c.calibration_iters = 2;
    c.warmup_iters = 3;
    c.dense_below = 0;
    auto codec = testing::make(c);
    auto state = codec->make_state(TensorInfo{.num_elements = static_cast<int64_t>(n)});
    std::vector<uint8_t> payload;
    for (int64_t t = 0; t < 12; ++t) {
      const auto g = testing::gaussian(n, 100 + static_cast<uint64_t>(t));
      const auto before = ErrorFeedback::residual(*state);
      std::vector<float> corrected(n);
      for (size_t i = 0; i < n; ++i) corrected[i] = before[i] + g[i];
      REQUIRE(codec->encode(*state, ChunkInput{.values = g, .iteration = t}, payload).is_ok());
      std::vector<float> sent(n);
      REQUIRE(codec->decode(payload, sent).is_ok());
      const auto after = ErrorFeedback::residual(*state);
      for (size_t i = 0; i < n; ++i) REQUIRE(sent[i] + after[i] == corrected[i]);
    }
  }
}

TEST_CASE("over many iterations: sum sent + residual == sum of gradients exactly",
          "[compress][ef]") {
  const size_t n = 5000;
  for (const char* name : {"laco", "topk", "graddrop"}) {
    INFO(name);
    CodecConfig c = testing::config_for(name);
    c.quant_bits = 32;  // laco: fp32 values, so integer sums stay exact
    c.calibration_iters = 2;
    c.warmup_iters = 4;
    c.dense_below = 0;
    auto codec = testing::make(c);
    auto state = codec->make_state(TensorInfo{.num_elements = static_cast<int64_t>(n)});
    std::mt19937 rng(42);
    std::vector<float> total_g(n, 0.0f), total_sent(n, 0.0f);
    std::vector<uint8_t> payload;
    for (int64_t t = 0; t < 30; ++t) {
      const auto g = integer_gradient(n, rng);
      for (size_t i = 0; i < n; ++i) total_g[i] += g[i];
      // Two chunks, as the worker would push them.
      for (size_t off : {size_t{0}, n / 2}) {
        const auto part = std::span<const float>(g).subspan(off, n / 2);
        REQUIRE(
            codec
                ->encode(
                    *state,
                    ChunkInput{.offset = static_cast<int64_t>(off), .values = part, .iteration = t},
                    payload)
                .is_ok());
        REQUIRE(
            codec->decode_accumulate(payload, std::span(total_sent).subspan(off, n / 2)).is_ok());
      }
    }
    const auto residual = ErrorFeedback::residual(*state);
    size_t nonzero_residual = 0;
    for (size_t i = 0; i < n; ++i) {
      REQUIRE(total_sent[i] + residual[i] == total_g[i]);
      nonzero_residual += residual[i] != 0.0f;
    }
    CHECK(nonzero_residual > n / 2);  // the test is not vacuous: most elements were held back
  }
}

TEST_CASE("signsgd with error feedback conserves within fp32 rounding", "[compress][ef]") {
  const size_t n = 4096;
  auto codec = testing::make(testing::config_for("signsgd"));
  auto state = codec->make_state(TensorInfo{.num_elements = static_cast<int64_t>(n)});
  std::vector<double> total_g(n, 0.0), total_sent(n, 0.0);
  std::vector<uint8_t> payload;
  for (int64_t t = 0; t < 20; ++t) {
    const auto g = testing::gaussian(n, 300 + static_cast<uint64_t>(t));
    REQUIRE(codec->encode(*state, ChunkInput{.values = g, .iteration = t}, payload).is_ok());
    std::vector<float> sent(n);
    REQUIRE(codec->decode(payload, sent).is_ok());
    for (size_t i = 0; i < n; ++i) {
      total_g[i] += g[i];
      total_sent[i] += sent[i];
    }
  }
  const auto residual = ErrorFeedback::residual(*state);
  for (size_t i = 0; i < n; ++i) {
    REQUIRE(std::fabs(total_sent[i] + residual[i] - total_g[i]) <=
            1e-4 * (1 + std::fabs(total_g[i])));
  }
}

TEST_CASE("without error feedback nothing is kept back", "[compress][ef]") {
  auto codec = testing::make(testing::config_for("topk", false));
  CHECK(dynamic_cast<ErrorFeedback*>(codec.get()) == nullptr);
  auto state = codec->make_state(TensorInfo{.num_elements = 10});
  CHECK(ErrorFeedback::residual(*state).empty());
}

}  // namespace psrt::compress

TEST_CASE("LACO's subtract_sent takes off exactly what the payload decodes to",
          "[compress][ef]") {
  // The fast path (the encode's own indices and codes) against parsing the payload, bit for bit,
  // through calibration (dense), warm-up and the steady state, for 8-bit codes and fp32 values.
  using namespace psrt::compress;
  for (int bits : {8, 32}) {
    CodecConfig c = psrt::compress::testing::config_for("laco", false);
    c.calibration_iters = 2;
    c.warmup_iters = 3;
    c.quant_bits = bits;
    auto codec = psrt::compress::testing::make(c);
    REQUIRE(codec);
    auto state = codec->make_state(TensorInfo{.num_elements = 5000});
    std::vector<uint8_t> payload;
    for (int64_t t = 0; t < 10; ++t) {
      const std::vector<float> g = psrt::compress::testing::gaussian(5000, 100 + uint64_t(t));
      REQUIRE(codec->encode(*state, ChunkInput{.values = g, .iteration = t}, payload).is_ok());
      std::vector<float> fast = psrt::compress::testing::gaussian(5000, 200 + uint64_t(t));
      std::vector<float> parsed = fast;
      REQUIRE(codec->subtract_sent(*state, payload, fast).is_ok());
      REQUIRE(codec->accumulate_sent(payload, parsed, -1.0f).is_ok());
      INFO("quant_bits " << bits << ", iteration " << t);
      CHECK(std::memcmp(fast.data(), parsed.data(), fast.size() * sizeof(float)) == 0);
    }
  }
}
