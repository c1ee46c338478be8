// The CPU passes: the fused residual update gives what the separate passes give, bit for bit.
#include <catch2/catch.hpp>

#include <algorithm>
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
  for (float bad :
       {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
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

TEST_CASE("finite values whose squares overflow a float are finite moments",
          "[compress][kernels]") {
  // |v| = 1e20 (a diverging run): the float lanes' squares overflowed, and LACO said "holds a NaN
  // or an infinity" where the values were finite.
  for (size_t n : {size_t{8}, size_t{1503}}) {
    std::vector<float> v(n, 1e20f);
    v[n - 1] = -1e20f;
    const ChunkMoments m = chunk_moments(v);
    CHECK(m.finite);
    CHECK(m.max_abs == 1e20f);
    CHECK(m.sum_squares == Approx(double(n) * double(1e20f) * double(1e20f)));
  }
}

namespace {

// moments.h's order of the sum of squares, written out plainly: the CUDA encoder's first pass
// (cuda/lads_kernels.cu) takes exactly these steps, so the GPU's RMS equals this bit for bit.
double documented_sum_of_squares(const std::vector<float>& v) {
  const size_t n8 = v.size() / kMomentLanes * kMomentLanes;
  std::vector<double> blocks, groups, supers;
  for (size_t start = 0; start < n8; start += kMomentBlock) {
    float lane[kMomentLanes] = {};
    for (size_t i = start; i < std::min(start + kMomentBlock, n8); ++i) {
      const float sq = v[i] * v[i];
      lane[i % kMomentLanes] = lane[i % kMomentLanes] + sq;
    }
    const float l04 = lane[0] + lane[4], l15 = lane[1] + lane[5];
    const float l26 = lane[2] + lane[6], l37 = lane[3] + lane[7];
    blocks.push_back(static_cast<double>((l04 + l15) + (l26 + l37)));
  }
  auto fold = [](const std::vector<double>& parts, size_t per) {
    std::vector<double> out;
    for (size_t s = 0; s < parts.size(); s += per) {
      double sum = 0.0;
      for (size_t j = s; j < std::min(s + per, parts.size()); ++j) sum += parts[j];
      out.push_back(sum);
    }
    return out;
  };
  groups = fold(blocks, kMomentGroupBlocks);
  supers = fold(groups, kMomentSuperGroups);
  double total = 0.0;
  for (const double s : supers) total += s;
  for (size_t i = n8; i < v.size(); ++i) total += static_cast<double>(v[i]) * v[i];
  return total;
}

}  // namespace

TEST_CASE("chunk_moments sums the squares in moments.h's order, bit for bit",
          "[compress][kernels]") {
  // Sizes around every boundary of the order: lanes, blocks, groups (32 blocks), super groups
  // (64 groups = 2,097,152 elements) and the tail.
  for (size_t n : {size_t{0}, size_t{5}, size_t{8}, size_t{1023}, size_t{1024}, size_t{1031},
                   size_t{32768}, size_t{32768 + 9}, size_t{65 * 1024 + 3},
                   size_t{(1u << 21) + 32768 * 3 + 1024 + 13}}) {
    INFO("n " << n);
    const auto g = gaussian(n, n + 17);
    const ChunkMoments m = chunk_moments(g);
    CHECK(m.sum_squares == documented_sum_of_squares(g));
    float mx = 0;
    for (const float x : g) mx = std::max(mx, std::fabs(x));
    CHECK(m.max_abs == mx);
  }
}
