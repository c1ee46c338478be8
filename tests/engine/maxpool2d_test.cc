// MaxPool2d: forward against a double reference, argmax-routed gradient against central
// differences (inputs without ties), and the tie rule.
#include <catch2/catch.hpp>

#include "core/status.h"
#include "tests/engine/conv_reference.h"
#include "engine/maxpool2d.h"

using namespace psrt::engine;
using namespace psrt::engine::testing;

TEST_CASE("MaxPool2d forward and gradient match a double reference", "[engine][maxpool]") {
  struct Case {
    int n, c, h, w, k, s;
  };
  for (const Case t : {Case{2, 3, 6, 8, 2, 2}, Case{1, 2, 7, 5, 2, 2}, Case{2, 1, 7, 7, 3, 2}}) {
    INFO("case " << t.h << "x" << t.w << " k " << t.k << " s " << t.s);
    std::mt19937_64 gen(51 + t.h);
    MaxPool2d layer("pool", PoolGeom{t.c, t.h, t.w, t.k, t.s});
    const int oh = (t.h - t.k) / t.s + 1, ow = (t.w - t.k) / t.s + 1;
    REQUIRE(layer.out_size() == static_cast<std::size_t>(t.c * oh * ow));
    CHECK(layer.params().empty());
    // Distinct values (a shuffled grid), so that the max is unique and differentiable.
    Vec x(static_cast<std::size_t>(t.n) * layer.in_size());
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = 0.01 * static_cast<double>(i);
    std::shuffle(x.begin(), x.end(), gen);
    const Vec r = as_float_values(random_vec(t.n * layer.out_size(), gen));
    const auto xf = to_float(x), rf = to_float(r);
    std::vector<float> y(t.n * layer.out_size()), dx(xf.size(), 7.0f);
    layer.forward(xf.data(), y.data(), t.n, true);
    CHECK(rel_error(y, maxpool_ref(x, t.n, t.c, t.h, t.w, t.k, t.s)) < 1e-7);
    layer.backward(xf.data(), y.data(), rf.data(), dx.data(), t.n);
    auto loss = [&] { return dot(r, maxpool_ref(x, t.n, t.c, t.h, t.w, t.k, t.s)); };
    CHECK(rel_error(dx, numeric_grad(x, loss, 1e-3)) < 1e-6);
  }
}

TEST_CASE("MaxPool2d routes a tied window's gradient to its first maximum", "[engine][maxpool]") {
  MaxPool2d layer("pool", PoolGeom{1, 2, 4, 2, 2});
  const std::vector<float> x = {1, 5, 2, 2,   // window 0: 1 5 / 5 0 -> first 5 at (0, 1)
                                5, 0, 2, 2};  // window 1: all 2 -> (0, 2)
  std::vector<float> y(2), dx(8);
  const std::vector<float> dy = {3, 4};
  layer.forward(x.data(), y.data(), 1, true);
  CHECK(y == std::vector<float>{5, 2});
  layer.backward(x.data(), y.data(), dy.data(), dx.data(), 1);
  CHECK(dx == std::vector<float>{0, 3, 4, 0, 0, 0, 0, 0});
  CHECK_THROWS_AS(MaxPool2d("bad", PoolGeom{1, 1, 4, 2, 2}), psrt::ConfigError);
}
