// LACO under Adam correction with `adam_select: gradient`: the threshold applies to the residual
// times Adam's denominator (the residual in the gradient's units), the residual's own values are
// sent, and error feedback keeps the rest.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "compress/cpu_kernels.h"
#include "compress/error_feedback.h"
#include "test_util.h"

namespace psrt::compress {

namespace {

constexpr size_t kN = 4000;
constexpr size_t kBig = 2000;  // elements [0, kBig) have gradients 1000x larger than the rest

CodecConfig select_config(bool gradient) {
  CodecConfig c = testing::config_for("laco");
  c.adam = true;
  c.quant_bits = 1;
  c.adam_select_gradient = gradient;
  c.calibration_iters = 2;
  c.warmup_iters = 0;
  c.dense_below = 0;
  c.density = 0.02;
  return c;
}

// Steady gradients with 10% noise: 1 on the first kBig elements, 0.001 on the others. Adam's
// direction is about 1 on both.
std::vector<float> gradient(uint64_t t) {
  auto g = testing::gaussian(kN, 900 + t, 0.1f);
  for (size_t i = 0; i < kN; ++i) g[i] = (1.0f + g[i]) * (i < kBig ? 1.0f : 0.001f);
  return g;
}

struct Run {
  size_t kept_big = 0, kept_small = 0;  // elements sent after calibration, by group
  std::vector<double> sent_plus_residual;
};

Run run(bool select_gradient, int iterations) {
  auto codec = testing::make(select_config(select_gradient));
  REQUIRE(codec != nullptr);
  auto state = codec->make_state(TensorInfo{.num_elements = int64_t(kN)});
  Run out;
  out.sent_plus_residual.assign(kN, 0.0);
  std::vector<uint8_t> payload;
  for (int64_t t = 0; t < iterations; ++t) {
    const auto g = gradient(uint64_t(t));
    REQUIRE(codec->encode(*state, ChunkInput{.values = g, .iteration = t}, payload).is_ok());
    std::vector<float> sent(kN);
    REQUIRE(codec->decode(payload, sent).is_ok());
    for (size_t i = 0; i < kN; ++i) {
      out.sent_plus_residual[i] += sent[i];
      if (t >= 2 && sent[i] != 0.0f) ++(i < kBig ? out.kept_big : out.kept_small);
    }
  }
  const auto r = ErrorFeedback::residual(*state);
  for (size_t i = 0; i < kN; ++i) out.sent_plus_residual[i] += r[i];
  return out;
}

}  // namespace

TEST_CASE("adam_gradient_key is the residual times Adam's denominator", "[compress][adam]") {
  const size_t n = 1000;
  std::vector<float> m(n, 0.0f), v(n, 0.0f), acc(n, 0.0f), key(n);
  const AdamStep step = adam_step(0.9, 0.999, 1e-8, 3, 4);
  const auto g = testing::gaussian(n, 5, 0.01f);
  adam_add_and_moments(m, v, step, acc, g);
  const ChunkMoments km = adam_gradient_key(m, v, step, acc, key);
  double sum_squares = 0;
  for (size_t i = 0; i < n; ++i) {
    const double mh = double(step.c1) * m[i];
    const double vh = double(v[i]) * step.c2 * step.c2;
    const double q = std::min(mh * mh, vh);
    const double den = std::sqrt(q + (vh - q) / 4.0) + 1e-8;
    REQUIRE(key[i] == Approx(acc[i] * den).epsilon(1e-5));
    // The direction times its denominator gives back Adam's bias-corrected first moment.
    REQUIRE(key[i] == Approx(mh).epsilon(1e-4).margin(1e-9));
    sum_squares += double(key[i]) * key[i];
  }
  CHECK(km.finite);
  CHECK(km.sum_squares == Approx(sum_squares).epsilon(1e-5));
}

TEST_CASE("selecting by the gradient's units sends the large-gradient elements first",
          "[compress][adam][laco]") {
  const Run direction = run(false, 12), grad = run(true, 12);
  INFO("direction: big " << direction.kept_big << ", small " << direction.kept_small
                         << "; gradient: big " << grad.kept_big << ", small " << grad.kept_small);
  // By Adam's direction both groups look alike (about 1 per step), so both are sent ...
  CHECK(direction.kept_small > direction.kept_big / 4);
  // ... by the gradient's units the small-gradient elements wait in the residual.
  CHECK(grad.kept_big > 100);
  CHECK(grad.kept_small == 0);
  // Either way what was sent plus the residual is the sum of the same directions.
  for (size_t i = 0; i < kN; ++i) {
    REQUIRE(grad.sent_plus_residual[i] ==
            Approx(direction.sent_plus_residual[i]).epsilon(1e-4).margin(1e-4));
  }
}

TEST_CASE("adam_select: gradient needs Adam correction, laco and quant_bits 1 or 32",
          "[compress][adam]") {
  CHECK(make_codec(select_config(true)).is_ok());
  CodecConfig c = select_config(true);
  c.quant_bits = 32;
  CHECK(make_codec(c).is_ok());
  c.quant_bits = 8;
  CHECK_THAT(make_codec(c).status().message(), Catch::Contains("compression.adam_select"));
  c = select_config(true);
  c.adam = false;
  CHECK_THAT(make_codec(c).status().message(), Catch::Contains("compression.adam_select"));
  c = select_config(true);
  c.codec = "topk";
  CHECK_THAT(make_codec(c).status().message(), Catch::Contains("compression.adam_select"));
}

}  // namespace psrt::compress
