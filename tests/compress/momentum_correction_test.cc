// Momentum correction (DGC): the worker's momentum, accumulated into the error-feedback residual,
// with the momentum of every sent element cleared.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "compress/error_feedback.h"
#include "test_util.h"

namespace psrt::compress {

TEST_CASE("each step: u = m*u + g, residual += u, with masking sent elements lose their momentum",
          "[compress][momentum]") {
  const size_t n = 12000;
  const size_t half = 5000;  // two chunks of one tensor, encoded in turn
  const float m = 0.9f;
  const bool masking = GENERATE(false, true);
  for (const char* name : {"laco", "topk", "graddrop", "signsgd"}) {
    if (masking && std::string(name) == "signsgd") continue;  // dense: refused (below)
    INFO(name << (masking ? " with masking" : " without masking"));
    CodecConfig c = testing::config_for(name);
    c.momentum = m;
    c.momentum_masking = masking;
    c.calibration_iters = 2;
    c.warmup_iters = 3;
    c.dense_below = 0;
    auto codec = testing::make(c);
    REQUIRE(codec != nullptr);
    const auto* ef = dynamic_cast<const ErrorFeedback*>(codec.get());
    REQUIRE(ef != nullptr);
    CHECK(ef->momentum() == m);
    CHECK(ef->masking() == masking);
    auto state = codec->make_state(TensorInfo{.num_elements = int64_t(n)});
    std::vector<float> u(n, 0.0f);  // the reference momentum
    int64_t cleared = 0, kept = 0;
    for (int64_t t = 0; t < 12; ++t) {
      const auto g = testing::gaussian(n, 500 + uint64_t(t));
      for (auto [offset, len] : {std::pair<size_t, size_t>{0, half}, {half, n - half}}) {
        const auto residual = ErrorFeedback::residual(*state);
        std::vector<float> corrected(len);
        for (size_t i = 0; i < len; ++i) {
          u[offset + i] = m * u[offset + i] + g[offset + i];
          corrected[i] = residual[offset + i] + u[offset + i];
        }
        const auto decoded = testing::encode_chunk(*codec, *state, g, offset, len, t);
        REQUIRE(decoded.has_value());
        const std::vector<float>& sent = *decoded;
        const auto after = ErrorFeedback::residual(*state);
        const auto mom = ErrorFeedback::momentum_buffer(*state);
        for (size_t i = 0; i < len; ++i) {
          if (std::string(name) == "signsgd") {  // v - scale rounds (compress/README.md)
            REQUIRE(sent[i] + after[offset + i] == Approx(corrected[i]).margin(1e-4));
          } else {
            REQUIRE(sent[i] + after[offset + i] == corrected[i]);  // error feedback, exactly
          }
          if (sent[i] != 0.0f && masking) {
            REQUIRE(mom[offset + i] == 0.0f);
            u[offset + i] = 0.0f;
            ++cleared;
          } else {
            REQUIRE(mom[offset + i] == u[offset + i]);
            ++kept;
          }
        }
      }
    }
    // Past warm-up most elements keep their momentum; with masking the sent ones were cleared.
    if (masking) {
      CHECK(cleared > 0);
      CHECK(kept > cleared);
    } else {
      CHECK(cleared == 0);
    }
  }
}

TEST_CASE("momentum correction needs a codec with error feedback, masking a sparsifying one",
          "[compress][momentum]") {
  CodecConfig none = testing::config_for("none");
  none.momentum = 0.9;
  REQUIRE_FALSE(make_codec(none));
  CHECK_THAT(make_codec(none).status().message(), Catch::Contains("momentum_correction"));
  CodecConfig sign = testing::config_for("signsgd");
  sign.momentum = 0.9;
  CHECK(make_codec(sign));
  sign.momentum_masking = true;
  REQUIRE_FALSE(make_codec(sign));
  CHECK_THAT(make_codec(sign).status().message(), Catch::Contains("momentum_masking"));
  CodecConfig mask_only = testing::config_for("laco");
  mask_only.momentum_masking = true;
  REQUIRE_FALSE(make_codec(mask_only));
  CodecConfig no_ef = testing::config_for("laco", false);
  no_ef.momentum = 0.9;
  REQUIRE_FALSE(make_codec(no_ef));
  CHECK_THAT(make_codec(no_ef).status().message(), Catch::Contains("error_feedback"));
  CodecConfig too_big = testing::config_for("topk");
  too_big.momentum = 1.0;
  REQUIRE_FALSE(make_codec(too_big));
  CodecConfig off = testing::config_for("laco");
  auto plain = testing::make(off);
  REQUIRE(dynamic_cast<const ErrorFeedback*>(plain.get()) != nullptr);
  CHECK(dynamic_cast<const ErrorFeedback*>(plain.get())->momentum() == 0);
  auto plain_state = plain->make_state(TensorInfo{.num_elements = 10});
  CHECK(ErrorFeedback::momentum_buffer(*plain_state).empty());
}

TEST_CASE("a state from another codec or a chunk outside the tensor is an error, nothing moves",
          "[compress][momentum]") {
  CodecConfig c = testing::config_for("topk");
  c.momentum = 0.5;
  auto codec = testing::make(c);
  auto other = testing::make(testing::config_for("topk"));
  auto foreign = other->make_state(TensorInfo{.num_elements = 100});
  const auto g = testing::gaussian(100, 3);
  std::vector<uint8_t> payload;
  CHECK_FALSE(codec->encode(*foreign, ChunkInput{.values = g}, payload));
  auto state = codec->make_state(TensorInfo{.num_elements = 100});
  CHECK_FALSE(codec->encode(*state, ChunkInput{.offset = 50, .values = g}, payload));
  for (float x : ErrorFeedback::momentum_buffer(*state)) REQUIRE(x == 0.0f);
}

}  // namespace psrt::compress
