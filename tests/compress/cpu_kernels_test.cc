// The CPU passes: the fused residual update gives what the separate passes give, bit for bit.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "compress/cpu_kernels.h"
#include "tests/compress/test_util.h"

using namespace psrt::compress;
using psrt::compress::testing::gaussian;

namespace {

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

}  // namespace

TEST_CASE("add_and_moments equals the add then chunk_moments, bit for bit", "[compress][kernels]") {
  // Sizes around the 8-lane and 1024-element block edges, and a misaligned start.
  for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{1023}, size_t{1024},
                   size_t{1031}, size_t{5000}}) {
    for (size_t shift : {size_t{0}, size_t{1}}) {
      const std::vector<float> g = gaussian(n + shift, 11 + n);
      std::vector<float> fused = gaussian(n + shift, 12 + n, 0.3f);
      std::vector<float> separate = fused;
      const std::span<const float> gs(g.data() + shift, n);
      for (size_t i = 0; i < n; ++i) separate[shift + i] += gs[i];
      const ChunkMoments want = chunk_moments(std::span<const float>(separate.data() + shift, n));
      const ChunkMoments got = add_and_moments(std::span<float>(fused.data() + shift, n), gs);
      INFO("n = " << n << ", shift = " << shift);
      CHECK(fused == separate);
      CHECK(same_bits(got.sum_squares, want.sum_squares));
      CHECK(got.max_abs == want.max_abs);
      CHECK(got.finite == want.finite);
    }
  }
}

TEST_CASE("momentum_add_and_moments equals u = m*u + g, r += u, then chunk_moments, bit for bit",
          "[compress][kernels]") {
  const float m = 0.9f;
  for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{1023}, size_t{1024},
                   size_t{1031}, size_t{5000}}) {
    for (size_t shift : {size_t{0}, size_t{1}}) {
      const std::vector<float> g = gaussian(n + shift, 21 + n);
      std::vector<float> r = gaussian(n + shift, 22 + n, 0.3f), u = gaussian(n + shift, 23 + n);
      std::vector<float> r_want = r, u_want = u;
      for (size_t i = shift; i < n + shift; ++i) {
        u_want[i] = m * u_want[i] + g[i];
        r_want[i] += u_want[i];
      }
      const ChunkMoments want = chunk_moments(std::span<const float>(r_want.data() + shift, n));
      const ChunkMoments got = momentum_add_and_moments(
          std::span<float>(u.data() + shift, n), m, std::span<float>(r.data() + shift, n),
          std::span<const float>(g.data() + shift, n));
      INFO("n = " << n << ", shift = " << shift);
      CHECK(u == u_want);
      CHECK(r == r_want);
      CHECK(same_bits(got.sum_squares, want.sum_squares));
      CHECK(got.max_abs == want.max_abs);
      CHECK(got.finite == want.finite);
    }
  }
}

TEST_CASE("add_and_moments reports a NaN or an infinity in the sums", "[compress][kernels]") {
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    for (size_t at : {size_t{3}, size_t{1500}}) {  // in the vector body and in the tail
      std::vector<float> acc(1503, 0.5f);
      std::vector<float> g(1503, 0.25f);
      g[at] = bad;
      CHECK_FALSE(add_and_moments(acc, g).finite);
    }
  }
  std::vector<float> acc(100, std::numeric_limits<float>::max());
  const std::vector<float> g(100, std::numeric_limits<float>::max());
  CHECK_FALSE(add_and_moments(acc, g).finite);  // the sum overflows to infinity
}
