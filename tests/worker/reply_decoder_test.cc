// The worker's side of compressed replies: dense values are copied, an encoded change is added,
// and anything else is an error that leaves the values untouched.
#include <catch2/catch.hpp>

#include <cstring>
#include <random>
#include <vector>

#include "compress/codec_config.h"
#include "compress/registry.h"
#include "psrt.pb.h"
#include "worker/reply_decoder.h"

using namespace psrt;

namespace {

std::span<const uint8_t> bytes_of(const std::vector<float>& v) {
  return {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(float)};
}

CompressionConfig laco_replies() {
  CompressionConfig c;
  c.codec = "laco";
  c.calibration_iters = 1;
  c.warmup_iters = 0;
  c.dense_below = 0;
  c.compress_replies = true;
  return c;
}

}  // namespace

TEST_CASE("dense replies are copied, a wrong size is refused", "[worker][replies]") {
  const ReplyDecoder dense{CompressionConfig{}};
  std::vector<float> dst(8, 1.0f);
  const std::vector<float> values = {1, 2, 3, 4, 5, 6, 7, 8};
  REQUIRE(dense.apply(wire::CODEC_NONE, bytes_of(values), dst));
  CHECK(dst == values);
  const std::vector<float> short_values(7, 9.0f);
  CHECK_FALSE(dense.apply(wire::CODEC_NONE, bytes_of(short_values), dst));
  CHECK(dst == values);
  // A compressed reply where the job's replies are dense.
  CHECK_FALSE(dense.apply(wire::CODEC_LACO, bytes_of(values), dst));
  CHECK(dst == values);
}

TEST_CASE("an encoded change is added, a bad one leaves the values as they were",
          "[worker][replies]") {
  const CompressionConfig config = laco_replies();
  const ReplyDecoder decoder(config);
  compress::CodecConfig cc;
  cc.codec = "laco";
  cc.calibration_iters = 1;
  cc.warmup_iters = 0;
  cc.dense_below = 0;
  cc.error_feedback = false;
  auto codec = compress::make_codec(cc);
  REQUIRE(codec);
  const std::size_t n = 3000;
  auto state = codec.value()->make_state({int64_t(n), 0, 1});
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> change(n);
  for (auto& x : change) x = normal(rng);
  std::vector<uint8_t> payload;
  REQUIRE(codec.value()->encode(*state, {0, change, 0}, payload));  // calibration: dense
  REQUIRE(codec.value()->encode(*state, {0, change, 1}, payload));  // sparse 8-bit codes

  std::vector<float> expected(n, 0.25f);
  REQUIRE(codec.value()->decode_accumulate(payload, expected, 1.0f));
  std::vector<float> dst(n, 0.25f);
  REQUIRE(decoder.apply(wire::CODEC_LACO, payload, dst));
  CHECK(dst == expected);

  const std::vector<float> before = dst;
  std::vector<uint8_t> truncated(payload.begin(), payload.begin() + long(payload.size() / 2));
  CHECK_FALSE(decoder.apply(wire::CODEC_LACO, truncated, dst));
  std::vector<uint8_t> garbage(64);
  for (auto& b : garbage) b = uint8_t(rng());
  CHECK_FALSE(decoder.apply(wire::CODEC_LACO, garbage, dst));
  CHECK_FALSE(decoder.apply(wire::CODEC_TOPK, payload, dst));  // not this job's codec
  std::vector<float> wrong_length(n / 2);
  CHECK_FALSE(decoder.apply(wire::CODEC_LACO, payload, wrong_length));
  CHECK(dst == before);
}
