// Finite-difference gradient checks of the single layers against double-precision references.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "tests/engine/reference.h"
#include "engine/linear.h"
#include "engine/relu.h"
#include "engine/softmax_xent.h"

using namespace psrt::engine;
using namespace psrt::engine::testing;

TEST_CASE("Linear forward and gradients match a double reference", "[engine][linear]") {
  constexpr int n = 3, in = 5, out = 4;
  std::mt19937_64 gen(11);
  Vec x = as_float_values(random_vec(n * in, gen));
  Vec w = as_float_values(random_vec(out * in, gen));
  Vec b = as_float_values(random_vec(out, gen));
  const Vec r = as_float_values(random_vec(n * out, gen));  // upstream gradient dL/dy

  Linear layer("fc", in, out, LinearInit::kHeNormal);
  auto params = layer.params();
  REQUIRE(params.size() == 2);
  REQUIRE(params[0].suffix == "weight");
  REQUIRE(params[0].value.size() == static_cast<std::size_t>(out * in));
  REQUIRE(params[1].suffix == "bias");
  std::copy(w.begin(), w.end(), params[0].value.begin());
  std::copy(b.begin(), b.end(), params[1].value.begin());

  const auto xf = to_float(x), rf = to_float(r);
  std::vector<float> y(n * out), dx(n * in);
  layer.forward(xf.data(), y.data(), n, true);
  const Vec y_ref = linear_ref(x, w, b, n, in, out);
  for (std::size_t i = 0; i < y.size(); ++i) REQUIRE(y[i] == Approx(y_ref[i]).margin(1e-5));

  layer.backward(xf.data(), y.data(), rf.data(), dx.data(), n);

  // The scalar whose gradient backward computes: L = sum(r .* y).
  auto loss = [&] {
    const Vec yy = linear_ref(x, w, b, n, in, out);
    double s = 0;
    for (std::size_t i = 0; i < yy.size(); ++i) s += r[i] * yy[i];
    return s;
  };
  CHECK(rel_error(params[0].grad, numeric_grad(w, loss, 1e-4)) < 1e-3);
  CHECK(rel_error(params[1].grad, numeric_grad(b, loss, 1e-4)) < 1e-3);
  CHECK(rel_error(dx, numeric_grad(x, loss, 1e-4)) < 1e-3);
}

TEST_CASE("Linear init: He normal, Xavier uniform, zero bias, seeded", "[engine][linear]") {
  Linear he("a", 400, 300, LinearInit::kHeNormal);
  Linear xavier("b", 400, 300, LinearInit::kXavierUniform);
  he.init_params(5);
  xavier.init_params(5);
  auto stats = [](std::span<const float> v) {
    double s = 0, s2 = 0;
    for (float x : v) {
      s += x;
      s2 += double(x) * x;
    }
    const double mean = s / v.size();
    return std::pair{mean, std::sqrt(s2 / v.size() - mean * mean)};
  };
  const auto [he_mean, he_std] = stats(he.params()[0].value);
  CHECK(std::abs(he_mean) < 0.005);
  CHECK(he_std == Approx(std::sqrt(2.0 / 400)).epsilon(0.03));
  const double a = std::sqrt(6.0 / 700);
  const auto xw = xavier.params()[0].value;
  const auto [x_mean, x_std] = stats(xw);
  CHECK(std::abs(x_mean) < 0.005);
  CHECK(x_std == Approx(a / std::sqrt(3.0)).epsilon(0.03));
  CHECK(*std::max_element(xw.begin(), xw.end()) <= a);
  CHECK(*std::min_element(xw.begin(), xw.end()) >= -a);
  for (float v : he.params()[1].value) REQUIRE(v == 0.0f);

  Linear again("c", 400, 300, LinearInit::kHeNormal);
  again.init_params(5);
  CHECK(std::equal(again.params()[0].value.begin(), again.params()[0].value.end(),
                   he.params()[0].value.begin()));
}

TEST_CASE("ReLU forward and gradient match a double reference", "[engine][relu]") {
  constexpr int n = 4, size = 6;
  std::mt19937_64 gen(12);
  Vec x = random_vec(n * size, gen);
  for (double& v : x) v = static_cast<float>(v < 0 ? v - 0.05 : v + 0.05);  // away from the kink
  const Vec r = as_float_values(random_vec(n * size, gen));
  Relu layer("relu", size);
  CHECK(layer.params().empty());
  const auto xf = to_float(x), rf = to_float(r);
  std::vector<float> y(n * size), dx(n * size);
  layer.forward(xf.data(), y.data(), n, true);
  const Vec y_ref = relu_ref(x);
  for (std::size_t i = 0; i < y.size(); ++i) REQUIRE(y[i] == Approx(y_ref[i]));
  layer.backward(xf.data(), y.data(), rf.data(), dx.data(), n);
  auto loss = [&] {
    const Vec yy = relu_ref(x);
    double s = 0;
    for (std::size_t i = 0; i < yy.size(); ++i) s += r[i] * yy[i];
    return s;
  };
  CHECK(rel_error(dx, numeric_grad(x, loss, 1e-4)) < 1e-3);
  // Both signs occur, so the check covers the pass and the block.
  CHECK(std::count(dx.begin(), dx.end(), 0.0f) > 0);
  CHECK(std::count(dx.begin(), dx.end(), 0.0f) < static_cast<long>(dx.size()));
}

TEST_CASE("Softmax cross-entropy: loss, probabilities and mean gradient", "[engine][xent]") {
  constexpr int n = 4, k = 5;
  std::mt19937_64 gen(13);
  Vec z = as_float_values(random_vec(n * k, gen, -3, 3));
  const std::vector<int32_t> labels = {0, 3, 4, 3};
  SoftmaxXent layer("loss", k);
  layer.set_labels(labels.data());
  const auto zf = to_float(z);
  std::vector<float> p(n * k), dz(n * k);
  layer.forward(zf.data(), p.data(), n, true);
  CHECK(layer.loss() == Approx(xent_ref(z, labels, n, k)).epsilon(1e-6));
  for (int r = 0; r < n; ++r) {
    double s = 0;
    for (int c = 0; c < k; ++c) s += p[r * k + c];
    CHECK(s == Approx(1.0).epsilon(1e-6));
  }
  layer.backward(zf.data(), p.data(), nullptr, dz.data(), n);
  auto loss = [&] { return xent_ref(z, labels, n, k); };
  CHECK(rel_error(dz, numeric_grad(z, loss, 1e-5)) < 1e-3);
}

TEST_CASE("Softmax cross-entropy is stable for large logits", "[engine][xent]") {
  const std::vector<float> z = {1000.0f, 0.0f, -1000.0f};
  const std::vector<int32_t> labels = {0};
  SoftmaxXent layer("loss", 3);
  layer.set_labels(labels.data());
  std::vector<float> p(3);
  layer.forward(z.data(), p.data(), 1, true);
  CHECK(std::isfinite(layer.loss()));
  CHECK(layer.loss() == Approx(0.0).margin(1e-6));
  CHECK(p[0] == Approx(1.0f));
}
