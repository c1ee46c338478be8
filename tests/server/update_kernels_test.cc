// The update kernels (AVX2 or baseline, whichever this CPU runs) give exactly the bits of a plain
// scalar loop with the same operations in the same order: no FMA, no reordered sum.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "server/update_kernels.h"

using namespace psrt;

namespace {

std::vector<float> random_vector(std::size_t n, std::mt19937& rng, float scale) {
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Scalar references, one element at a time (volatile keeps the compiler from fusing them).
float ref_adam(float& p, float g, float& m, float& v, const kernels::AdamStep& s) {
  volatile float d = g + s.wd * p;
  volatile float mm = s.b1 * m + (1.0f - s.b1) * d;
  volatile float dd = (1.0f - s.b2) * d;
  volatile float vv = s.b2 * v + dd * d;
  m = mm;
  v = vv;
  volatile float den = std::sqrt(v) * s.inv_bias2 + s.eps;
  volatile float step = s.step_size * m;
  p -= step / den;
  return p;
}

}  // namespace

TEST_CASE("update kernels match scalar loops bit for bit", "[optimizer]") {
  std::mt19937 rng(5);
  for (std::size_t n : {0u, 1u, 7u, 8u, 9u, 31u, 1031u, 2048u, 2049u, 5000u}) {
    INFO(n << " elements");
    const auto p0 = random_vector(n, rng, 1.0f);
    const auto g = random_vector(n, rng, 0.1f);
    const auto m0 = random_vector(n, rng, 0.01f);
    std::vector<float> v0 = random_vector(n, rng, 0.01f);
    for (auto& x : v0) x = x * x;

    std::vector<float> p = p0, want = p0;
    kernels::sgd(p.data(), g.data(), n, 0.05f, 1e-4f);
    for (std::size_t i = 0; i < n; ++i) {
      volatile float step = 0.05f * (g[i] + 1e-4f * want[i]);
      want[i] -= step;
    }
    CHECK(same_bits(p, want));

    p = p0, want = p0;
    std::vector<float> m = m0, want_m = m0;
    kernels::sgd_momentum(p.data(), g.data(), m.data(), n, 0.05f, 1e-4f, 0.9f);
    for (std::size_t i = 0; i < n; ++i) {
      volatile float d = g[i] + 1e-4f * want[i];
      volatile float mm = 0.9f * want_m[i] + d;
      want_m[i] = mm;
      volatile float step = 0.05f * want_m[i];
      want[i] -= step;
    }
    CHECK(same_bits(p, want));
    CHECK(same_bits(m, want_m));

    const kernels::AdamStep s{0.01f, 1.3f, 0.9f, 0.999f, 1e-8f, 5e-5f};
    p = p0, want = p0, m = m0, want_m = m0;
    std::vector<float> v = v0, want_v = v0;
    kernels::adam(p.data(), g.data(), m.data(), v.data(), n, s);
    for (std::size_t i = 0; i < n; ++i) ref_adam(want[i], g[i], want_m[i], want_v[i], s);
    CHECK(same_bits(p, want));
    CHECK(same_bits(m, want_m));
    CHECK(same_bits(v, want_v));

    for (std::size_t workers : {1u, 2u, 5u}) {
      std::vector<std::vector<float>> in;
      std::vector<const float*> ptrs;
      for (std::size_t w = 0; w < workers; ++w) in.push_back(random_vector(n, rng, 1.0f));
      for (const auto& x : in) ptrs.push_back(x.data());
      std::vector<float> out(n, 7.0f), want_out(n);
      kernels::mean_into(out.data(), ptrs.data(), workers, n);
      for (std::size_t i = 0; i < n; ++i) {
        volatile float sum = in[0][i];
        for (std::size_t w = 1; w < workers; ++w) sum = sum + in[w][i];
        want_out[i] = sum * (1.0f / float(workers));
      }
      INFO(workers << " workers");
      CHECK(same_bits(out, want_out));
    }
  }
}
