#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "compress/log_quant.h"

namespace psrt::compress {

TEST_CASE("log8 decode error stays within (2^(R/254) - 1) |v|", "[compress][quant]") {
  for (int range : {1, 4, 8, 12, 16, 24, 64}) {
    const LogCodebook book(range);
    const double bound = book.error_bound();
    std::mt19937 rng(static_cast<unsigned>(range));
    std::uniform_real_distribution<double> octave(-range, 0.0);
    const float scale = 3.7f;
    float t[kLogLevels];
    book.thresholds(scale, t);
    for (int k = 0; k < 20000; ++k) {
      const float v = static_cast<float>(scale * std::exp2(octave(rng))) * (k % 2 ? -1.0f : 1.0f);
      if (std::fabs(v) < t[0]) continue;  // below the code range: not sent
      const uint8_t code = LogCodebook::encode(v, t);
      const float q = book.decode(code, scale);
      INFO("range " << range << " v " << v << " q " << q);
      REQUIRE(std::signbit(q) == std::signbit(v));
      REQUIRE(std::fabs(q - v) <= (bound * (1 + 1e-5) + 1e-6) * std::fabs(v));
    }
    // The scale itself decodes exactly.
    REQUIRE(book.decode(LogCodebook::encode(scale, t), scale) == scale);
    REQUIRE(book.decode(LogCodebook::encode(-scale, t), scale) == -scale);
  }
  CHECK(LogCodebook(12).error_bound() == Approx(0.0333).epsilon(0.01));
}

TEST_CASE("log8 codes are monotone in |v|", "[compress][quant]") {
  const LogCodebook book(12);
  float t[kLogLevels];
  book.thresholds(1.0f, t);
  unsigned last = 0;
  for (double e = -12.02; e <= 0.0; e += 0.001) {
    const float v = static_cast<float>(std::exp2(e));
    if (v < t[0]) continue;
    const unsigned c = LogCodebook::encode(v, t);
    REQUIRE(c >= last);
    REQUIRE(c <= 127);
    last = c;
  }
  CHECK(last == 127);
}

}  // namespace psrt::compress
