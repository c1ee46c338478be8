// Conv2d and im2col: forward against a direct double convolution, gradients against central
// differences of it, for several geometries (padding, stride, odd sizes, several channels).
#include <catch2/catch.hpp>

#include "core/status.h"
#include "tests/engine/conv_reference.h"
#include "engine/conv2d.h"
#include "engine/im2col.h"

using namespace psrt::engine;
using namespace psrt::engine::testing;

namespace {

void check_conv(const ConvShape& s, uint64_t seed) {
  INFO("n " << s.n << " c " << s.c << " " << s.h << "x" << s.w << " oc " << s.oc << " k " << s.k
            << " stride " << s.stride << " pad " << s.pad);
  std::mt19937_64 gen(seed);
  const ConvGeom g{s.c, s.h, s.w, s.oc, s.k, s.stride, s.pad};
  Conv2d layer("conv", g);
  REQUIRE(layer.out_size() == static_cast<std::size_t>(s.oc * s.oh() * s.ow()));
  Vec x = as_float_values(random_vec(s.n * g.in_size(), gen));
  Vec w = as_float_values(random_vec(s.oc * g.col_rows(), gen));
  Vec b = as_float_values(random_vec(s.oc, gen));
  const Vec r = as_float_values(random_vec(s.n * layer.out_size(), gen));
  auto params = layer.params();
  REQUIRE(params.size() == 2);
  REQUIRE(params[0].suffix == "weight");
  REQUIRE(params[0].value.size() == w.size());
  REQUIRE(params[1].suffix == "bias");
  std::copy(w.begin(), w.end(), params[0].value.begin());
  std::copy(b.begin(), b.end(), params[1].value.begin());

  const auto xf = to_float(x), rf = to_float(r);
  std::vector<float> y(s.n * layer.out_size()), dx(xf.size(), 123.0f);
  layer.forward(xf.data(), y.data(), s.n, true);
  const Vec y_ref = conv2d_ref(x, w, b, s);
  CHECK(rel_error(y, y_ref) < 1e-6);
  layer.backward(xf.data(), y.data(), rf.data(), dx.data(), s.n);
  auto loss = [&] { return dot(r, conv2d_ref(x, w, b, s)); };
  CHECK(rel_error(params[0].grad, numeric_grad(w, loss, 1e-4)) < 1e-5);
  CHECK(rel_error(params[1].grad, numeric_grad(b, loss, 1e-4)) < 1e-5);
  CHECK(rel_error(dx, numeric_grad(x, loss, 1e-4)) < 1e-5);

  // A second backward overwrites (never accumulates) and din == nullptr skips the input gradient.
  const std::vector<float> dw_first(params[0].grad.begin(), params[0].grad.end());
  layer.backward(xf.data(), y.data(), rf.data(), nullptr, s.n);
  CHECK(std::equal(dw_first.begin(), dw_first.end(), params[0].grad.begin()));
  // Input the training forward did not see (another buffer): backward recomputes the columns;
  // an evaluation forward in between leaves the cache alone.
  const std::vector<float> x_copy = xf;
  std::vector<float> y_eval(y.size()), dx_again(dx.size());
  layer.forward(x_copy.data(), y_eval.data(), s.n, false);
  CHECK(y_eval == y);
  layer.backward(x_copy.data(), y.data(), rf.data(), dx_again.data(), s.n);
  CHECK(std::equal(dw_first.begin(), dw_first.end(), params[0].grad.begin()));
  CHECK(dx_again == dx);
  layer.backward(xf.data(), y.data(), rf.data(), dx_again.data(), s.n);  // cached again
  CHECK(dx_again == dx);
}

}  // namespace

TEST_CASE("Conv2d matches a direct double convolution and its central differences",
          "[engine][conv2d]") {
  check_conv({2, 1, 8, 8, 3, 5, 1, 2}, 31);  // LeNet conv1 shape, smaller
  check_conv({2, 3, 7, 6, 4, 5, 1, 0}, 32);  // LeNet conv2: no padding, odd sizes
  check_conv({3, 2, 6, 6, 5, 3, 1, 1}, 33);  // VGG 3x3 pad 1
  check_conv({2, 2, 7, 8, 3, 3, 2, 1}, 34);  // stride 2 with padding, odd height
  check_conv({1, 1, 4, 4, 2, 1, 1, 0}, 35);  // 1x1
  check_conv({1, 2, 3, 3, 2, 3, 3, 2}, 36);  // stride > kernel reach, padding > half the kernel
}

TEST_CASE("im2col and col2im_add are adjoint", "[engine][conv2d]") {
  // <col2im(c), x> == <c, im2col(x)> for any c, x: col2im_add is the transpose of im2col.
  const ConvGeom g{2, 7, 5, 1, 3, 2, 2};
  std::mt19937_64 gen(41);
  const auto x = to_float(random_vec(g.in_size(), gen));
  const auto c = to_float(random_vec(g.col_rows() * g.col_cols(), gen));
  std::vector<float> col(c.size()), back(x.size(), 0.0f);
  im2col(x.data(), g, col.data());
  col2im_add(c.data(), g, back.data());
  double lhs = 0, rhs = 0;
  for (std::size_t i = 0; i < x.size(); ++i) lhs += double(back[i]) * x[i];
  for (std::size_t i = 0; i < c.size(); ++i) rhs += double(c[i]) * col[i];
  CHECK(lhs == Approx(rhs).epsilon(1e-5));
}

TEST_CASE("Conv2d: He init, description, bad geometry", "[engine][conv2d]") {
  Conv2d conv("c", ConvGeom{16, 10, 10, 32, 3, 1, 1});
  conv.init_params(9);
  const auto w = conv.params()[0].value;
  double s2 = 0;
  for (float v : w) s2 += double(v) * v;
  CHECK(std::sqrt(s2 / w.size()) == Approx(std::sqrt(2.0 / 144)).epsilon(0.05));
  for (float v : conv.params()[1].value) CHECK(v == 0.0f);
  CHECK(conv.kind() == "conv2d");
  CHECK(conv.in_size() == 1600);
  CHECK(conv.out_size() == 3200);
  CHECK(conv.forward_flops() == (2.0 * 144 + 1) * 3200);
  CHECK_THROWS_AS(Conv2d("bad", ConvGeom{1, 3, 3, 1, 5, 1, 0}), psrt::ConfigError);
  CHECK_THROWS_AS(Conv2d("bad", ConvGeom{1, 3, 3, 1, 3, 0, 0}), psrt::ConfigError);
}
