// Dropout (seeded inverted dropout, identity in evaluation) and Flatten (a copy).
#include <catch2/catch.hpp>

#include "core/status.h"
#include "tests/engine/conv_reference.h"
#include "engine/dropout.h"
#include "engine/dropout_mask.h"
#include "engine/flatten.h"

using namespace psrt::engine;
using namespace psrt::engine::testing;

TEST_CASE("Dropout: fixed mask, inverted scaling, gradient by central differences",
          "[engine][dropout]") {
  constexpr int n = 4, size = 50;
  constexpr float p = 0.3f;
  Dropout layer("drop", size, p);
  layer.init_params(77);
  CHECK(layer.params().empty());
  std::mt19937_64 gen(61);
  Vec x = as_float_values(random_vec(n * size, gen));
  const Vec r = as_float_values(random_vec(n * size, gen));
  const auto xf = to_float(x), rf = to_float(r);
  std::vector<float> y(xf.size()), dx(xf.size());
  layer.forward(xf.data(), y.data(), n, true);
  const uint64_t step = layer.step_seed();
  const uint32_t threshold = dropout_threshold(p);
  // The mask, fixed for the reference: what the layer's hash draws for this step.
  std::vector<double> mask(xf.size());
  std::size_t kept = 0;
  for (std::size_t i = 0; i < mask.size(); ++i) {
    mask[i] = dropout_keeps(step, i, threshold) ? 1.0 / (1.0 - p) : 0.0;
    kept += mask[i] != 0.0;
  }
  CHECK(kept > mask.size() / 2);  // about 70% of 200
  CHECK(kept < mask.size() * 9 / 10);
  auto ref = [&] {
    Vec out(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) out[i] = static_cast<float>(mask[i]) * x[i];
    return out;
  };
  CHECK(rel_error(y, ref()) < 1e-7);
  layer.backward(xf.data(), y.data(), rf.data(), dx.data(), n);
  auto loss = [&] { return dot(r, ref()); };
  CHECK(rel_error(dx, numeric_grad(x, loss, 1e-4)) < 1e-6);

  // Evaluation is the identity and leaves the training mask alone.
  std::vector<float> ye(xf.size()), dx2(xf.size());
  layer.forward(xf.data(), ye.data(), n, false);
  CHECK(ye == xf);
  layer.backward(xf.data(), y.data(), rf.data(), dx2.data(), n);
  CHECK(dx2 == dx);

  // The next training step draws a new mask; a reseed replays the stream.
  std::vector<float> y2(xf.size()), y3(xf.size());
  layer.forward(xf.data(), y2.data(), n, true);
  CHECK(y2 != y);
  layer.reseed(77);
  layer.forward(xf.data(), y3.data(), n, true);
  CHECK(y3 == y);
  layer.set_next_step(1);
  layer.forward(xf.data(), y3.data(), n, true);
  CHECK(y3 == y2);
}

TEST_CASE("Dropout with p = 0 is the identity, p < 0 or p >= 1 is rejected", "[engine][dropout]") {
  Dropout layer("d", 5, 0.0f);
  const std::vector<float> x = {1, -2, 3, 4, 5};
  std::vector<float> y(5), dx(5);
  layer.forward(x.data(), y.data(), 1, true);
  CHECK(y == x);
  layer.backward(x.data(), y.data(), x.data(), dx.data(), 1);
  CHECK(dx == x);
  CHECK_THROWS_AS(Dropout("d", 5, 1.0f), psrt::ConfigError);
  CHECK_THROWS_AS(Dropout("d", 5, -0.1f), psrt::ConfigError);
}

TEST_CASE("Flatten copies forward and backward", "[engine][flatten]") {
  Flatten layer("flat", 6);
  CHECK(layer.kind() == "flatten");
  CHECK(layer.in_size() == 6);
  CHECK(layer.out_size() == 6);
  std::mt19937_64 gen(62);
  const auto x = to_float(random_vec(12, gen));
  const auto r = to_float(random_vec(12, gen));
  std::vector<float> y(12), dx(12);
  layer.forward(x.data(), y.data(), 2, true);
  CHECK(y == x);
  layer.backward(x.data(), y.data(), r.data(), dx.data(), 2);
  CHECK(dx == r);
}

TEST_CASE("Dropout after skip_random_steps(k) draws the masks of an uninterrupted run's step k",
          "[engine][dropout]") {
  // A resumed job (checkpoint at iteration k) must drop what the uninterrupted job drops.
  constexpr std::size_t kSize = 257;
  Dropout uninterrupted("d", kSize, 0.4f), resumed("d", kSize, 0.4f), fresh("d", kSize, 0.4f);
  for (Dropout* d : {&uninterrupted, &resumed, &fresh}) d->reseed_randomness(99);
  std::vector<float> in(kSize, 1.0f), a(kSize), b(kSize), c(kSize);
  for (int step = 0; step < 7; ++step) uninterrupted.forward(in.data(), a.data(), 1, true);
  resumed.skip_random_steps(6);
  resumed.forward(in.data(), b.data(), 1, true);
  fresh.forward(in.data(), c.data(), 1, true);
  CHECK(resumed.step_seed() == uninterrupted.step_seed());
  CHECK(b == a);
  CHECK(c != a);  // without the skip the masks differ
}
