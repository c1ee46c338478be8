// Round-trip error bounds per codec, and chunk-local decoding.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "compress/lads.h"
#include "compress/log_quant.h"
#include "test_util.h"

namespace psrt::compress {

namespace {

std::vector<float> round_trip(const Codec& codec, CodecState& state, std::span<const float> g,
                              int64_t iteration = 0, int64_t offset = 0) {
  std::vector<uint8_t> payload;
  REQUIRE(codec.encode(state, ChunkInput{.offset = offset, .values = g, .iteration = iteration},
                       payload)
              .is_ok());
  std::vector<float> out(g.size(), -7.0f);
  REQUIRE(codec.decode(payload, out).is_ok());
  return out;
}

}  // namespace

TEST_CASE("none is exact", "[compress][roundtrip]") {
  auto codec = testing::make(testing::config_for("none"));
  const auto g = testing::gaussian(1000, 1);
  auto state = codec->make_state(TensorInfo{.num_elements = 1000});
  CHECK(round_trip(*codec, *state, g) == g);
}

TEST_CASE("laco: kept values within the log8 bound, dropped ones under the threshold",
          "[compress][roundtrip][laco]") {
  const LogCodebook book(12);
  const auto g = testing::gaussian(50000, 2);
  for (float alpha : {0.5f, 2.0f, 2.6f, 3.0f}) {
    LadsScratch scratch;
    std::vector<uint8_t> payload;
    LadsParams params{.alpha = alpha, .quant_bits = 8, .log_range = 12};
    Result<LadsResult> r = lads_encode(g, params, book, scratch, payload);
    REQUIRE(r.is_ok());
    auto codec = testing::make(testing::config_for("laco", false));
    std::vector<float> out(g.size());
    REQUIRE(codec->decode(payload, out).is_ok());
    size_t kept = 0;
    for (size_t i = 0; i < g.size(); ++i) {
      if (out[i] != 0.0f) {
        ++kept;
        REQUIRE(std::fabs(out[i] - g[i]) <= book.error_bound() * 1.00001 * std::fabs(g[i]));
        REQUIRE(std::fabs(g[i]) >= r->threshold);
      } else {
        REQUIRE(std::fabs(g[i]) < r->threshold);
      }
    }
    CHECK(kept == r->kept);
    // Gaussian: the fraction above alpha * RMS is erfc(alpha / sqrt 2).
    const double expected = std::erfc(alpha / std::sqrt(2.0));
    CHECK(static_cast<double>(kept) / g.size() == Approx(expected).epsilon(0.15));
  }
}

TEST_CASE("laco with quant_bits 32 sends exact values", "[compress][roundtrip][laco]") {
  const auto g = testing::gaussian(10000, 3);
  LadsScratch scratch;
  std::vector<uint8_t> payload;
  REQUIRE(lads_encode(g, LadsParams{.alpha = 2.0f, .quant_bits = 32}, LogCodebook(12), scratch,
                      payload)
              .is_ok());
  auto codec = testing::make(testing::config_for("laco", false));
  std::vector<float> out(g.size());
  REQUIRE(codec->decode(payload, out).is_ok());
  for (size_t i = 0; i < g.size(); ++i) {
    if (out[i] != 0.0f) REQUIRE(out[i] == g[i]);
  }
}

TEST_CASE("topk keeps exactly the k largest magnitudes, exactly", "[compress][roundtrip]") {
  CodecConfig c = testing::config_for("topk", false);
  c.density = 0.03;
  auto codec = testing::make(c);
  const auto g = testing::gaussian(10007, 4);
  auto state = codec->make_state(TensorInfo{.num_elements = 10007});
  const auto out = round_trip(*codec, *state, g);
  float min_sent = INFINITY, max_unsent = 0;
  size_t kept = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    if (out[i] != 0.0f) {
      REQUIRE(out[i] == g[i]);
      min_sent = std::min(min_sent, std::fabs(g[i]));
      ++kept;
    } else {
      max_unsent = std::max(max_unsent, std::fabs(g[i]));
    }
  }
  CHECK(kept == static_cast<size_t>(std::ceil(0.03 * 10007)));
  CHECK(min_sent >= max_unsent);
}

TEST_CASE("topk breaks ties by lowest index", "[compress][roundtrip]") {
  CodecConfig c = testing::config_for("topk", false);
  c.density = 0.5;
  auto codec = testing::make(c);
  const std::vector<float> g = {1, -1, 1, 1, 2, 1};
  auto state = codec->make_state(TensorInfo{.num_elements = 6});
  CHECK(round_trip(*codec, *state, g) == std::vector<float>{1, -1, 0, 0, 2, 0});
}

TEST_CASE("graddrop drops about 99% and sends survivors exactly", "[compress][roundtrip]") {
  auto codec = testing::make(testing::config_for("graddrop", false));
  const auto g = testing::gaussian(200000, 5);
  auto state = codec->make_state(TensorInfo{.num_elements = 200000});
  const auto out = round_trip(*codec, *state, g);
  size_t kept = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    if (out[i] != 0.0f) {
      REQUIRE(out[i] == g[i]);
      ++kept;
    }
  }
  // A sample of 2000 puts the threshold's rank within a few standard errors.
  CHECK(static_cast<double>(kept) / g.size() == Approx(0.01).epsilon(0.35));
}

TEST_CASE("signsgd decodes sign times mean |g|", "[compress][roundtrip]") {
  auto codec = testing::make(testing::config_for("signsgd", false));
  const auto g = testing::gaussian(1001, 6);
  auto state = codec->make_state(TensorInfo{.num_elements = 1001});
  const auto out = round_trip(*codec, *state, g);
  double mean = 0;
  for (float v : g) mean += std::fabs(v);
  mean /= g.size();
  for (size_t i = 0; i < g.size(); ++i) {
    REQUIRE(std::signbit(out[i]) == std::signbit(g[i]));
    REQUIRE(std::fabs(out[i]) == Approx(mean).epsilon(1e-5));
  }
}

TEST_CASE("signsgd majority vote aggregates signs", "[compress][roundtrip]") {
  CodecConfig c = testing::config_for("signsgd");
  c.majority_vote = true;
  auto codec = testing::make(c);
  const std::vector<std::vector<float>> workers = {{1, -2, 3, -4}, {2, -1, -3, 5}, {-1, 3, -2, 6}};
  std::vector<float> sum(4, 0.0f);
  for (const auto& g : workers) {
    auto state = codec->make_state(TensorInfo{.num_elements = 4});
    std::vector<uint8_t> payload;
    REQUIRE(codec->encode(*state, ChunkInput{.values = g}, payload).is_ok());
    REQUIRE(codec->decode_accumulate(payload, sum).is_ok());
  }
  CHECK(sum == std::vector<float>{1, -1, -1, 1});
  codec->finish_aggregate(sum, 3);
  CHECK(sum == std::vector<float>{1, -1, -1, 1});
}

TEST_CASE("every chunk's payload decodes alone, in any order", "[compress][chunk]") {
  const size_t n = 40000;
  const size_t chunk = 9000;  // 5 chunks, the last short
  const auto g = testing::gaussian(n, 7);
  for (const char* name : testing::kAllCodecs) {
    INFO(name);
    CodecConfig c = testing::config_for(name);
    c.calibration_iters = 1;
    c.warmup_iters = 0;
    auto codec = testing::make(c);
    auto state = codec->make_state(TensorInfo{.num_elements = static_cast<int64_t>(n)});
    std::vector<std::vector<uint8_t>> payloads;
    std::vector<uint8_t> dummy;
    for (size_t off = 0; off < n; off += chunk) {  // iteration 0: calibration for laco
      const size_t len = std::min(chunk, n - off);
      REQUIRE(codec
                  ->encode(*state,
                           ChunkInput{.offset = static_cast<int64_t>(off),
                                      .values = std::span(g).subspan(off, len)},
                           dummy)
                  .is_ok());
    }
    for (size_t off = 0; off < n; off += chunk) {
      const size_t len = std::min(chunk, n - off);
      payloads.emplace_back();
      REQUIRE(codec
                  ->encode(*state,
                           ChunkInput{.offset = static_cast<int64_t>(off),
                                      .values = std::span(g).subspan(off, len),
                                      .iteration = 1},
                           payloads.back())
                  .is_ok());
    }
    // Reference: each chunk alone into its own buffer.
    std::vector<float> alone(n, 0.0f);
    for (size_t j = 0; j < payloads.size(); ++j) {
      const size_t off = j * chunk;
      std::vector<float> part(std::min(chunk, n - off));
      REQUIRE(codec->decode(payloads[j], part).is_ok());
      std::copy(part.begin(), part.end(), alone.begin() + static_cast<ptrdiff_t>(off));
    }
    // Reverse order, straight into the tensor buffer.
    std::vector<float> out(n, 0.0f);
    for (size_t j = payloads.size(); j-- > 0;) {
      const size_t off = j * chunk;
      REQUIRE(codec
                  ->decode_accumulate(payloads[j],
                                      std::span(out).subspan(off, std::min(chunk, n - off)))
                  .is_ok());
    }
    CHECK(out == alone);
    // A payload decoded into a slice of the wrong length is refused.
    std::vector<float> wrong(chunk + 1);
    CHECK_FALSE(codec->decode(payloads[0], wrong).is_ok());
  }
}

TEST_CASE("a saved and reloaded state encodes the next iterations like the original",
          "[compress][checkpoint]") {
  const size_t n = 5000;
  for (const char* name : testing::kAllCodecs) {
    for (const char* correction : {"", "momentum", "adam"}) {
      const std::string_view corr = correction;
      if (!corr.empty() && std::string_view(name) == "none") continue;  // config: needs a codec
      INFO(name << " correction: " << corr);
      CodecConfig c = testing::config_for(name);
      c.calibration_iters = 2;
      c.warmup_iters = 3;
      if (corr == "momentum") c.momentum = 0.9;
      c.adam = corr == "adam";
      auto codec = testing::make(c);
      const TensorInfo info{.num_elements = static_cast<int64_t>(n)};
      auto original = codec->make_state(info);
      std::vector<uint8_t> a, b;
      for (int64_t t = 0; t < 4; ++t) {
        const auto g = testing::gaussian(n, uint64_t(10 + t));
        REQUIRE(codec->encode(*original, ChunkInput{.values = g, .iteration = t}, a).is_ok());
      }
      ByteWriter w;
      codec->save_state(*original, w);
      auto reloaded = codec->make_state(info);
      const auto bytes = w.take();
      ByteReader r(bytes);
      REQUIRE(codec->load_state(*reloaded, r).is_ok());
      CHECK(r.left() == 0);
      for (int64_t t = 4; t < 10; ++t) {
        const auto g = testing::gaussian(n, uint64_t(10 + t));
        REQUIRE(codec->encode(*original, ChunkInput{.values = g, .iteration = t}, a).is_ok());
        REQUIRE(codec->encode(*reloaded, ChunkInput{.values = g, .iteration = t}, b).is_ok());
        REQUIRE(a == b);
      }
      // Bytes that do not fit are an error, not a crash.
      ByteReader cut(std::span<const uint8_t>(bytes).first(bytes.size() / 2));
      auto other = codec->make_state(info);
      if (bytes.size() > 1) CHECK_FALSE(codec->load_state(*other, cut).is_ok());
    }
  }
}

}  // namespace psrt::compress
