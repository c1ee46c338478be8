// LACO's method: calibration, hot start, density after warm-up, the hierarchical rule.
#include <catch2/catch.hpp>

#include <cmath>

#include "compress/density_schedule.h"
#include "compress/error_feedback.h"
#include "compress/laco_codec.h"
#include "compress/wire_format.h"
#include "test_util.h"

namespace psrt::compress {

namespace {

struct Encoded {
  uint32_t count;
  uint32_t length;
  size_t bytes;
};

Encoded encode_once(const Codec& codec, CodecState& state, std::span<const float> g, int64_t t) {
  std::vector<uint8_t> payload;
  REQUIRE(codec.encode(state, ChunkInput{.values = g, .iteration = t}, payload).is_ok());
  Result<PayloadView> view = parse_payload(payload);
  REQUIRE(view.is_ok());
  return {view->header.count, view->header.length, payload.size()};
}

}  // namespace

TEST_CASE("hot start falls from 1 to the target in exponential steps", "[compress][laco]") {
  CodecConfig c = testing::config_for("laco");
  c.density = 0.001;
  c.calibration_iters = 3;
  c.warmup_iters = 10;
  CHECK(scheduled_density(c, 0) == 1.0);
  CHECK(scheduled_density(c, 2) == 1.0);
  const double expected[] = {0.2512, 0.0631, 0.0158, 0.00398, 0.001};  // DGC's 25%, 6.25%, ...
  for (int s = 0; s < 5; ++s) {
    CHECK(scheduled_density(c, 3 + 2 * s) == Approx(expected[s]).epsilon(0.01));
    CHECK(scheduled_density(c, 4 + 2 * s) == Approx(expected[s]).epsilon(0.01));
  }
  CHECK(scheduled_density(c, 13) == 0.001);
  CHECK(scheduled_density(c, 1000) == 0.001);
  c.warmup_iters = 0;
  CHECK(scheduled_density(c, 3) == 0.001);
}

TEST_CASE("calibration iterations are sent dense and exact", "[compress][laco]") {
  CodecConfig c = testing::config_for("laco");
  c.calibration_iters = 3;
  auto codec = testing::make(c);
  auto state = codec->make_state(TensorInfo{.num_elements = 8192});
  for (int64_t t = 0; t < 3; ++t) {
    const auto g = testing::gaussian(8192, 10 + static_cast<uint64_t>(t));
    const Encoded e = encode_once(*codec, *state, g, t);
    CHECK(e.count == 8192);
    CHECK(e.bytes == kHeaderBytes + 4 * 8192);
  }
  // Alpha chosen for a Gaussian at 1% is the normal quantile, 2.576.
  CodecConfig flat = c;
  flat.hierarchical = false;
  const LacoCodec flat_codec(flat);
  auto flat_state = flat_codec.make_state(TensorInfo{.num_elements = 8192});
  std::vector<uint8_t> payload;
  for (int64_t t = 0; t < 3; ++t) {
    const auto g = testing::gaussian(8192, 10 + static_cast<uint64_t>(t));
    REQUIRE(
        flat_codec.encode(*flat_state, ChunkInput{.values = g, .iteration = t}, payload).is_ok());
  }
  // Warm-up of 20 iterations by default: at the last stage the target 1% applies.
  CHECK(flat_codec.alpha(*flat_state, 3 + 20) == Approx(2.576).epsilon(0.03));
}

TEST_CASE("density stays within 20% of the target after warm-up (Gaussian, error feedback)",
          "[compress][laco]") {
  const size_t n = 1 << 16;
  for (double density : {0.01, 0.001}) {
    INFO("density " << density);
    CodecConfig c = testing::config_for("laco");
    c.density = density;
    c.calibration_iters = 3;
    c.warmup_iters = 10;
    c.hierarchical = false;
    auto codec = testing::make(c);
    auto state = codec->make_state(TensorInfo{.num_elements = n});
    uint64_t sent = 0, total = 0;
    for (int64_t t = 0; t < 100; ++t) {
      const auto g = testing::gaussian(n, 1000 + static_cast<uint64_t>(t));
      const Encoded e = encode_once(*codec, *state, g, t);
      if (t >= c.calibration_iters + c.warmup_iters) {
        sent += e.count;
        total += e.length;
        // Per iteration, too, within a factor 2.
        REQUIRE(static_cast<double>(e.count) / n < 2 * density);
        REQUIRE(static_cast<double>(e.count) / n > 0.5 * density);
      }
    }
    CHECK(static_cast<double>(sent) / total == Approx(density).epsilon(0.2));
  }
}

TEST_CASE("laco payload is one to two orders of magnitude smaller than fp32", "[compress][laco]") {
  const size_t n = 1 << 16;
  CodecConfig c = testing::config_for("laco");
  c.calibration_iters = 2;
  c.warmup_iters = 5;
  c.hierarchical = false;
  auto codec = testing::make(c);
  auto state = codec->make_state(TensorInfo{.num_elements = n});
  Encoded e{};
  for (int64_t t = 0; t < 20; ++t)
    e = encode_once(*codec, *state, testing::gaussian(n, 50 + static_cast<uint64_t>(t)), t);
  const double ratio = static_cast<double>(n * 4) / static_cast<double>(e.bytes);
  CHECK(ratio > 100.0);  // ~1% kept at ~2-3 bytes each (varint index + code)
}

TEST_CASE("hierarchical rule: small and input-side tensors get more density", "[compress][laco]") {
  CodecConfig c = testing::config_for("laco");
  c.density = 0.01;
  c.calibration_iters = 1;
  c.warmup_iters = 0;
  const TensorInfo big_last{.num_elements = 1 << 20, .layer = 9, .num_layers = 10};
  const TensorInfo big_first{.num_elements = 1 << 20, .layer = 0, .num_layers = 10};
  const TensorInfo small_last{.num_elements = 4096, .layer = 9, .num_layers = 10};
  CHECK(layer_density(c, big_last, 5) == Approx(0.01));
  CHECK(layer_density(c, big_first, 5) == Approx(0.02));
  CHECK(layer_density(c, small_last, 5) == Approx(0.04));
  CHECK(hierarchy_factor(TensorInfo{.num_elements = 10, .layer = 0, .num_layers = 10}) ==
        Approx(8.0));
  c.hierarchical = false;
  CHECK(layer_density(c, small_last, 5) == 0.01);
}

TEST_CASE("tensors under dense_below are sent dense and exact", "[compress][laco]") {
  CodecConfig c = testing::config_for("laco");
  c.dense_below = 1000;
  c.calibration_iters = 1;
  auto codec = testing::make(c);
  auto state = codec->make_state(TensorInfo{.num_elements = 999});
  const auto g = testing::gaussian(999, 9);
  const Encoded e = encode_once(*codec, *state, g, 50);
  CHECK(e.count == 999);
  CHECK(e.bytes == kHeaderBytes + 4 * 999);
}

TEST_CASE("a NaN in the gradient is an error, not a payload", "[compress][laco]") {
  CodecConfig c = testing::config_for("laco", false);
  c.calibration_iters = 1;
  auto codec = testing::make(c);
  auto state = codec->make_state(TensorInfo{.num_elements = 5000});
  auto g = testing::gaussian(5000, 11);
  g[17] = NAN;
  std::vector<uint8_t> payload;
  CHECK_FALSE(codec->encode(*state, ChunkInput{.values = g, .iteration = 0}, payload).is_ok());
  CHECK_FALSE(codec->encode(*state, ChunkInput{.values = g, .iteration = 5}, payload).is_ok());
}

}  // namespace psrt::compress
