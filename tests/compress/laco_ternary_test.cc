// LACO with quant_bits 1: the kept elements go as sign bits times one magnitude per chunk (the
// mean |value| of the kept elements), with sparse indices. Encoding and error feedback (malformed
// ternary payloads: malformed_payload_test.cc).
#include <catch2/catch.hpp>

#include <cmath>

#include "compress/error_feedback.h"
#include "compress/lads.h"
#include "compress/wire_format.h"
#include "test_util.h"

namespace psrt::compress {

namespace {

CodecConfig ternary_config(double density = 0.01) {
  CodecConfig c = testing::config_for("laco");
  c.quant_bits = 1;
  c.calibration_iters = 1;
  c.warmup_iters = 0;
  c.dense_below = 0;
  c.density = density;
  return c;
}

}  // namespace

TEST_CASE("ternary LADS keeps |v| >= tau as sign x the kept elements' mean magnitude",
          "[compress][laco][ternary]") {
  const auto g = testing::gaussian(5000, 3);
  LadsScratch scratch;
  std::vector<uint8_t> payload;
  const LadsParams params{.alpha = 2.0f, .quant_bits = 1};
  Result<LadsResult> r = lads_encode(g, params, LogCodebook(12), scratch, payload);
  REQUIRE(r.is_ok());
  double sum = 0;
  uint32_t kept = 0;
  for (float v : g) {
    if (std::fabs(v) >= r->threshold) {
      sum += std::fabs(v);
      ++kept;
    }
  }
  REQUIRE(kept == r->kept);
  REQUIRE(kept > 50);  // alpha 2 keeps ~4.6%
  CHECK(r->scale == static_cast<float>(sum / kept));
  Result<PayloadView> view = parse_payload(payload);
  REQUIRE(view.is_ok());
  CHECK(view->header.value_mode == ValueMode::kSign);
  CHECK(view->header.index_mode == IndexMode::kVarint);
  CHECK(view->header.count == kept);
  // Indices plus one bit per kept element: much less than log8's byte per element.
  CHECK(payload.size() == kHeaderBytes + view->header.index_bytes + (kept + 7) / 8 + 4);

  auto codec = testing::make(ternary_config());
  std::vector<float> out(g.size(), 0.0f);
  REQUIRE(codec->decode_accumulate(payload, out).is_ok());
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::fabs(g[i]) >= r->threshold) {
      REQUIRE(out[i] == std::copysign(r->scale, g[i]));
    } else {
      REQUIRE(out[i] == 0.0f);
    }
  }
}

TEST_CASE("ternary LACO with error feedback: sent + residual == corrected gradient",
          "[compress][laco][ternary][ef]") {
  const size_t n = 4096;
  auto codec = testing::make(ternary_config(0.02));
  auto state = codec->make_state(TensorInfo{.num_elements = static_cast<int64_t>(n)});
  std::vector<double> total_g(n, 0.0), total_sent(n, 0.0);
  std::vector<uint8_t> payload;
  size_t sparse_sent = 0;
  for (int64_t t = 0; t < 40; ++t) {
    const auto g = testing::gaussian(n, 500 + static_cast<uint64_t>(t));
    REQUIRE(codec->encode(*state, ChunkInput{.values = g, .iteration = t}, payload).is_ok());
    std::vector<float> sent(n);
    REQUIRE(codec->decode(payload, sent).is_ok());
    if (t >= 1) {
      size_t nonzero = 0;
      for (float v : sent) nonzero += v != 0.0f;
      CHECK(nonzero < n / 5);  // sparse after calibration
      sparse_sent += nonzero;
    }
    for (size_t i = 0; i < n; ++i) {
      total_g[i] += g[i];
      total_sent[i] += sent[i];
    }
  }
  CHECK(sparse_sent > 0);
  const auto residual = ErrorFeedback::residual(*state);
  for (size_t i = 0; i < n; ++i) {
    REQUIRE(std::fabs(total_sent[i] + residual[i] - total_g[i]) <=
            1e-4 * (1 + std::fabs(total_g[i])));
  }
}

TEST_CASE("quant_bits and reply_quant_bits accept 1, 8 and 32 only",
          "[compress][laco][ternary]") {
  CodecConfig c = ternary_config();
  CHECK(make_codec(c).is_ok());
  c.quant_bits = 2;
  CHECK_THAT(make_codec(c).status().message(), Catch::Contains("compression.quant_bits"));
  c = ternary_config();
  for (const int ok : {0, 1, 8, 32}) {
    c.reply_quant_bits = ok;
    CHECK(make_codec(c).is_ok());
  }
  c.reply_quant_bits = 4;
  CHECK_THAT(make_codec(c).status().message(), Catch::Contains("compression.reply_quant_bits"));
}

}  // namespace psrt::compress
