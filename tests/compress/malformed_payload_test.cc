// Bad bytes from a peer give an error Status, never a crash, and leave the output untouched.
#include <catch2/catch.hpp>

#include <cstring>
#include <random>

#include "compress/wire_format.h"
#include "test_util.h"

namespace psrt::compress {

namespace {

constexpr size_t kN = 3000;

// A valid payload of each codec for a kN-element chunk; laco past calibration.
std::vector<uint8_t> valid_payload(const Codec& codec, double density_hint = 0) {
  (void)density_hint;
  auto state = codec.make_state(TensorInfo{.num_elements = kN});
  std::vector<uint8_t> payload;
  const auto g = testing::gaussian(kN, 77);
  for (int64_t t = 0; t < 3; ++t) {
    REQUIRE(codec.encode(*state, ChunkInput{.values = g, .iteration = t}, payload).is_ok());
  }
  return payload;
}

std::unique_ptr<Codec> codec_named(const char* name, double density = 0.01) {
  CodecConfig c = testing::config_for(name);
  c.calibration_iters = 1;
  c.warmup_iters = 0;
  c.dense_below = 0;
  c.density = density;
  return testing::make(c);
}

// Decoding must fail and leave `out` as it was.
void expect_rejected(const Codec& codec, const std::vector<uint8_t>& payload) {
  std::vector<float> out(kN, 1.5f);
  const Status s = codec.decode_accumulate(payload, out);
  REQUIRE_FALSE(s.is_ok());
  REQUIRE_FALSE(s.message().empty());
  for (float v : out) REQUIRE(v == 1.5f);
}

// A sparse ternary LACO payload (quant_bits 1) of a kN-element chunk past calibration whose
// count is not a multiple of 8 (its last sign byte has bits past count).
std::vector<uint8_t> ternary_payload(const Codec& codec) {
  std::vector<uint8_t> payload;
  for (uint64_t seed = 77; payload.empty() || get_u32(payload.data() + 12) % 8 == 0; ++seed) {
    auto state = codec.make_state(TensorInfo{.num_elements = kN});
    const auto g = testing::gaussian(kN, seed);
    for (int64_t t = 0; t < 3; ++t) {
      REQUIRE(codec.encode(*state, ChunkInput{.values = g, .iteration = t}, payload).is_ok());
    }
  }
  REQUIRE(payload[3] == static_cast<uint8_t>(ValueMode::kSign));
  REQUIRE(payload[2] != static_cast<uint8_t>(IndexMode::kAll));
  return payload;
}

}  // namespace

TEST_CASE("truncated payloads are rejected at every length", "[compress][malformed]") {
  for (const char* name : testing::kAllCodecs) {
    INFO(name);
    auto codec = codec_named(name);
    const auto payload = valid_payload(*codec);
    for (size_t len = 0; len < payload.size(); len += 1 + len / 64) {
      expect_rejected(*codec, std::vector<uint8_t>(payload.begin(),
                                                   payload.begin() + static_cast<ptrdiff_t>(len)));
    }
    auto longer = payload;
    longer.push_back(0);
    expect_rejected(*codec, longer);
  }
}

TEST_CASE("bad count, length, version, codec id and modes are rejected", "[compress][malformed]") {
  for (const char* name : testing::kAllCodecs) {
    INFO(name);
    auto codec = codec_named(name);
    const auto payload = valid_payload(*codec);
    const uint32_t count = get_u32(payload.data() + 12);
    for (uint32_t bad : {count + 1, count == 0 ? 5u : count - 1, 0xffffffffu}) {
      auto p = payload;
      put_u32(p.data() + 12, bad);
      expect_rejected(*codec, p);
    }
    auto p = payload;
    put_u32(p.data() + 8, kN + 1);  // length: not this chunk
    expect_rejected(*codec, p);
    p = payload;
    p[0] = static_cast<uint8_t>((p[0] + 1) % 5);  // another codec
    expect_rejected(*codec, p);
    p = payload;
    p[0] = 200;
    expect_rejected(*codec, p);
    p = payload;
    p[1] = 9;  // version
    expect_rejected(*codec, p);
    p = payload;
    p[2] = 3;  // index mode
    expect_rejected(*codec, p);
    p = payload;
    p[3] = 7;  // value mode
    expect_rejected(*codec, p);
    p = payload;
    p[6] = 1;  // reserved
    expect_rejected(*codec, p);
    p = payload;
    put_u32(p.data() + 16, get_u32(p.data() + 16) + 1);  // index bytes
    expect_rejected(*codec, p);
  }
}

TEST_CASE("indices out of range are rejected", "[compress][malformed]") {
  for (const char* name : {"laco", "topk", "graddrop"}) {
    INFO(name);
    auto codec = codec_named(name);
    const auto payload = valid_payload(*codec);
    REQUIRE(payload[2] == static_cast<uint8_t>(IndexMode::kVarint));
    // Shrink the claimed length below the last index (count stays <= length).
    auto p = payload;
    put_u32(p.data() + 8, get_u32(p.data() + 12) + 1);
    std::vector<float> out(get_u32(p.data() + 8), 0.0f);
    const Status s = codec->decode_accumulate(p, out);
    REQUIRE_FALSE(s.is_ok());
    CHECK_THAT(s.message(), Catch::Contains("out of range"));
    // A huge gap in the first varint.
    p = payload;
    p[kHeaderBytes] = 0xff;
    expect_rejected(*codec, p);
  }
}

TEST_CASE("bitmap payloads check population and trailing bits", "[compress][malformed]") {
  auto codec = codec_named("topk", 0.3);  // dense enough that a bitmap wins
  const auto payload = valid_payload(*codec);
  REQUIRE(payload[2] == static_cast<uint8_t>(IndexMode::kBitmap));
  auto p = payload;
  p[kHeaderBytes] ^= 0x01;  // one element more or less than count
  expect_rejected(*codec, p);
  // kN = 3000 is a multiple of 8, so use a chunk of 3001 for the trailing-bits check.
  auto state = codec->make_state(TensorInfo{.num_elements = 3001});
  const auto g = testing::gaussian(3001, 5);
  std::vector<uint8_t> q;
  REQUIRE(codec->encode(*state, ChunkInput{.values = g}, q).is_ok());
  REQUIRE(q[2] == static_cast<uint8_t>(IndexMode::kBitmap));
  const size_t last = kHeaderBytes + bitmap_bytes(3001) - 1;
  q[last] |= 0x80;  // bit 3007: past the length
  std::vector<float> out(3001, 0.0f);
  CHECK_FALSE(codec->decode_accumulate(q, out).is_ok());
}

TEST_CASE("non-finite values and scales, bad log ranges are rejected", "[compress][malformed]") {
  auto topk = codec_named("topk");
  auto p = valid_payload(*topk);
  put_f32(p.data() + p.size() - 4, NAN);  // the last fp32 value
  expect_rejected(*topk, p);

  auto laco = codec_named("laco");
  p = valid_payload(*laco);
  REQUIRE(p[3] == static_cast<uint8_t>(ValueMode::kLog8));
  auto q = p;
  put_f32(q.data() + q.size() - 4, INFINITY);  // scale
  expect_rejected(*laco, q);
  q = p;
  put_f32(q.data() + q.size() - 4, -1.0f);
  expect_rejected(*laco, q);
  for (uint8_t r : {0, 65, 255}) {
    q = p;
    q[4] = r;
    expect_rejected(*laco, q);
  }

  auto sign = codec_named("signsgd");
  p = valid_payload(*sign);
  put_f32(p.data() + p.size() - 4, NAN);
  expect_rejected(*sign, p);
}

TEST_CASE("random corruption never crashes and never half-writes", "[compress][malformed]") {
  std::mt19937 rng(2024);
  for (const char* name : testing::kAllCodecs) {
    INFO(name);
    auto codec = codec_named(name);
    const auto payload = valid_payload(*codec);
    std::uniform_int_distribution<size_t> pos(0, payload.size() - 1);
    std::uniform_int_distribution<int> byte(0, 255);
    int rejected = 0;
    for (int k = 0; k < 300; ++k) {
      auto p = payload;
      const int flips = 1 + k % 4;
      for (int f = 0; f < flips; ++f) p[pos(rng)] = static_cast<uint8_t>(byte(rng));
      std::vector<float> out(kN, 1.5f);
      const Status s = codec->decode_accumulate(p, out);
      if (!s.is_ok()) {
        ++rejected;
        for (float v : out) REQUIRE(v == 1.5f);
      } else {
        for (float v : out) REQUIRE(std::isfinite(v));
      }
    }
    CHECK(rejected > 0);
    // Pure garbage of random lengths.
    for (int k = 0; k < 200; ++k) {
      std::vector<uint8_t> junk(static_cast<size_t>(k * 7));
      for (auto& b : junk) b = static_cast<uint8_t>(byte(rng));
      std::vector<float> out(kN, 1.5f);
      (void)codec->decode_accumulate(junk, out);
    }
  }
}

TEST_CASE("malformed ternary payloads are rejected and never half-written",
          "[compress][laco][ternary][malformed]") {
  CodecConfig c = testing::config_for("laco");
  c.quant_bits = 1;
  c.calibration_iters = 1;
  c.warmup_iters = 0;
  c.dense_below = 0;
  c.density = 0.01;
  auto codec = testing::make(c);
  const auto payload = ternary_payload(*codec);
  for (size_t len = 0; len < payload.size(); ++len) {
    expect_rejected(*codec, std::vector<uint8_t>(payload.begin(),
                                                 payload.begin() + static_cast<ptrdiff_t>(len)));
  }
  auto p = payload;
  p.push_back(0);
  expect_rejected(*codec, p);
  const uint32_t count = get_u32(payload.data() + 12);
  for (uint32_t bad : {count + 1, count - 1, 0xffffffffu}) {
    p = payload;
    put_u32(p.data() + 12, bad);
    expect_rejected(*codec, p);
  }
  p = payload;
  p[p.size() - 5] |= 0x80;  // a sign bit past count in the last sign byte
  expect_rejected(*codec, p);
  for (float scale : {NAN, INFINITY, -1.0f}) {
    p = payload;
    put_f32(p.data() + p.size() - 4, scale);
    expect_rejected(*codec, p);
  }
  p = payload;
  p[4] = 12;  // a log range for a sign payload
  expect_rejected(*codec, p);

  std::mt19937 rng(99);
  std::uniform_int_distribution<size_t> pos(0, payload.size() - 1);
  std::uniform_int_distribution<int> byte(0, 255);
  int rejected = 0;
  for (int k = 0; k < 400; ++k) {
    p = payload;
    for (int f = 0; f <= k % 4; ++f) p[pos(rng)] = static_cast<uint8_t>(byte(rng));
    std::vector<float> out(kN, 1.5f);
    if (!codec->decode_accumulate(p, out).is_ok()) {
      ++rejected;
      for (float v : out) REQUIRE(v == 1.5f);
    } else {
      for (float v : out) REQUIRE(std::isfinite(v));
    }
  }
  CHECK(rejected > 0);
}

}  // namespace psrt::compress
