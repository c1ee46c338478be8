// LacoCodec's step methods (plan, record, lads_params, account_*), which the CUDA path takes on
// the host state: taken by hand they give encode()'s payloads and state, and plan() says what the
// method says.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "compress/laco_codec.h"
#include "compress/lads.h"
#include "compress/payload_writer.h"
#include "test_util.h"

namespace psrt::compress {

namespace {

CodecConfig steps_config() {
  CodecConfig c = testing::config_for("laco", false);
  c.calibration_iters = 3;  // 0..2
  c.warmup_iters = 10;      // 3..12, five stages of two
  c.recheck_every = 25;
  c.dense_below = 1024;
  return c;
}

// encode(), spelled out with the steps as laco_codec.h documents them.
Status encode_by_steps(const LacoCodec& codec, LacoState& s, std::span<const float> g, int64_t t,
                       LadsScratch& scratch, std::vector<uint8_t>& payload) {
  const LacoPlan p = codec.plan(s, t);
  if (p.record) {
    PSRT_RETURN_IF_ERROR(codec.record(s, t, g));
  }
  if (p.dense) {
    write_dense_fp32(CodecId::kLaco, g, payload);
    codec.account_dense(s, g.size(), payload.size());
    return Status::ok();
  }
  const LadsParams params = codec.lads_params(s, t);
  Result<LadsResult> r =
      lads_encode(g, params, codec.codebooks().get(params.log_range), scratch, payload);
  if (!r) return r.status();
  codec.account_sparse(s, t, params, g.size(), r->kept, payload.size());
  return Status::ok();
}

}  // namespace

TEST_CASE(
    "plan: dense tensors and calibration dense, re-checks at each warm-up stage and every "
    "recheck_every",
    "[compress][laco]") {
  const LacoCodec codec(steps_config());
  auto small = codec.make_state(TensorInfo{.num_elements = 1023});
  auto big = codec.make_state(TensorInfo{.num_elements = 1024});
  LacoState* s = LacoCodec::laco_state(*small);
  LacoState* b = LacoCodec::laco_state(*big);
  REQUIRE(s != nullptr);
  REQUIRE(b != nullptr);
  for (int64_t t = 0; t < 100; ++t) {
    INFO("iteration " << t);
    const LacoPlan ps = codec.plan(*s, t);
    CHECK(ps.dense);
    CHECK_FALSE(ps.record);
    const LacoPlan pb = codec.plan(*b, t);
    CHECK(pb.dense == (t < 3));
    const bool recheck =
        t == 3 || t == 5 || t == 7 || t == 9 || t == 11 || t == 13 || t == 38 || t == 63 || t == 88;
    CHECK(pb.record == (t < 3 || recheck));
  }
}

TEST_CASE("laco_state finds LACO's own states only", "[compress][laco]") {
  const LacoCodec codec(steps_config());
  auto own = codec.make_state(TensorInfo{.num_elements = 10});
  CHECK(LacoCodec::laco_state(*own) != nullptr);
  auto topk = testing::make(testing::config_for("topk", false));
  auto other = topk->make_state(TensorInfo{.num_elements = 10});
  CHECK(LacoCodec::laco_state(*other) == nullptr);
  auto wrapped = testing::make(testing::config_for("laco", true));  // ErrorFeedback's state
  auto outer = wrapped->make_state(TensorInfo{.num_elements = 10});
  CHECK(LacoCodec::laco_state(*outer) == nullptr);
}

TEST_CASE("the steps taken by hand give encode()'s payloads, stats and alpha", "[compress][laco]") {
  for (int bits : {8, 32}) {
    CodecConfig c = steps_config();
    c.quant_bits = bits;
    const LacoCodec codec(c);
    for (int64_t n : {int64_t{600}, int64_t{5000}, int64_t{40000}}) {
      INFO("bits " << bits << " n " << n);
      const TensorInfo info{.num_elements = n, .layer = 1, .num_layers = 4};
      auto by_encode = codec.make_state(info);
      auto by_steps = codec.make_state(info);
      LacoState& s = *LacoCodec::laco_state(*by_steps);
      LadsScratch scratch;
      std::vector<uint8_t> a, b;
      const int64_t chunk = n > 10000 ? 15000 : n;  // chunks at 0, 15000, 30000
      for (int64_t t = 0; t < 40; ++t) {
        const auto g = testing::gaussian(static_cast<size_t>(n), 77 + static_cast<uint64_t>(t));
        for (int64_t off = 0; off < n; off += chunk) {
          const auto v = std::span<const float>(g).subspan(
              static_cast<size_t>(off), static_cast<size_t>(std::min(chunk, n - off)));
          REQUIRE(
              codec.encode(*by_encode, ChunkInput{.offset = off, .values = v, .iteration = t}, a)
                  .is_ok());
          REQUIRE(encode_by_steps(codec, s, v, t, scratch, b).is_ok());
          REQUIRE(a == b);
        }
        CHECK(codec.alpha(*by_encode, t + 1) == codec.alpha(*by_steps, t + 1));
      }
      const EncodeStats x = codec.stats(*by_encode), y = codec.stats(*by_steps);
      CHECK(x.elements == y.elements);
      CHECK(x.sent == y.sent);
      CHECK(x.bytes == y.bytes);
      if (n >= c.dense_below) CHECK(x.sent < x.elements);
    }
  }
}

TEST_CASE("record: a NaN is an error in calibration, skipped at a re-check", "[compress][laco]") {
  const LacoCodec codec(steps_config());
  auto state = codec.make_state(TensorInfo{.num_elements = 4096});
  LacoState& s = *LacoCodec::laco_state(*state);
  auto g = testing::gaussian(4096, 3);
  REQUIRE(codec.record(s, 0, g).is_ok());
  const double alpha = codec.alpha(*state, 20);
  CHECK(alpha > 0.0);
  g[7] = NAN;
  CHECK_FALSE(codec.record(s, 1, g).is_ok());
  CHECK(codec.record(s, 13, g).is_ok());  // a re-check iteration: not recorded
  CHECK(codec.alpha(*state, 20) == alpha);
}

}  // namespace psrt::compress
