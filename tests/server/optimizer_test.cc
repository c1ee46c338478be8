// The servers' arithmetic against a direct reference computation in double precision: the
// synchronous mean, SGD with momentum and weight decay (PyTorch's convention), Adam with L2 decay.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "server/optimizer.h"

using namespace psrt;

namespace {

std::vector<float> random_vector(std::size_t n, std::mt19937& rng, float scale = 1.0f) {
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// |got - want| <= atol + rtol * |want| for every element; reports the worst.
void check_close(const std::vector<float>& got, const std::vector<double>& want, double rtol,
                 double atol) {
  REQUIRE(got.size() == want.size());
  std::size_t bad = 0, worst_at = 0;
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double err = std::abs(double(got[i]) - want[i]);
    const double excess = err / (atol + rtol * std::abs(want[i]));
    if (excess > worst) {
      worst = excess;
      worst_at = i;
    }
    if (excess > 1) ++bad;
  }
  INFO(bad << " elements off; worst at " << worst_at << ": " << got[worst_at] << " vs "
           << want[worst_at]);
  CHECK(bad == 0);
}

OptimizerConfig sgd(double lr, double momentum, double wd) {
  OptimizerConfig c;
  c.type = "sgd";
  c.lr = lr;
  c.momentum = momentum;
  c.weight_decay = wd;
  return c;
}

}  // namespace

TEST_CASE("aggregate_mean is the element-wise mean of the workers' gradients", "[optimizer]") {
  std::mt19937 rng(11);
  for (std::size_t workers : {1u, 2u, 3u, 7u}) {
    const std::size_t n = 1031;
    std::vector<std::vector<float>> in;
    std::vector<const float*> ptrs;
    for (std::size_t w = 0; w < workers; ++w) in.push_back(random_vector(n, rng));
    for (const auto& v : in) ptrs.push_back(v.data());
    std::vector<float> out(n, 123.0f);
    aggregate_mean(out, ptrs);
    std::vector<double> want(n, 0.0);
    for (std::size_t i = 0; i < n; ++i) {
      for (const auto& v : in) want[i] += v[i];
      want[i] /= double(workers);
    }
    INFO(workers << " workers");
    check_close(out, want, 1e-5, 1e-6);
    // Deterministic: the same inputs give bit-identical output.
    std::vector<float> again(n);
    aggregate_mean(again, ptrs);
    CHECK(again == out);
  }
  // Exactly representable values give the exact mean.
  const std::vector<float> a{1, 2, 3}, b{3, 4, 5}, c{5, 6, 10};
  std::vector<float> out(3);
  aggregate_mean(out, {a.data(), b.data(), c.data()});
  CHECK(out == std::vector<float>{3, 4, 6});
}

TEST_CASE("plain SGD is p - lr * g", "[optimizer]") {
  const auto opt = make_optimizer(sgd(0.5, 0, 0));
  std::vector<float> p{1.0f, -2.0f, 0.25f, 8.0f};
  const std::vector<float> g{0.5f, 1.0f, -0.5f, 0.0f};
  OptimizerState s;
  opt->update(p, g, s);
  CHECK(p == std::vector<float>{0.75f, -2.5f, 0.5f, 8.0f});
}

TEST_CASE("SGD with momentum and weight decay matches PyTorch's update", "[optimizer]") {
  std::mt19937 rng(7);
  const std::size_t n = 2053;
  for (const auto& [momentum, wd] : std::vector<std::pair<double, double>>{
           {0.0, 0.0}, {0.0, 0.01}, {0.9, 0.0}, {0.9, 1e-3}, {0.5, 0.1}}) {
    INFO("momentum " << momentum << " weight_decay " << wd);
    const double lr = 0.1;
    const auto opt = make_optimizer(sgd(lr, momentum, wd));
    std::vector<float> p = random_vector(n, rng);
    std::vector<double> ref(p.begin(), p.end());
    std::vector<double> buf(n, 0.0);
    OptimizerState s;
    for (int step = 0; step < 5; ++step) {
      const std::vector<float> g = random_vector(n, rng, 0.5f);
      opt->update(p, g, s);
      for (std::size_t i = 0; i < n; ++i) {
        double d = double(g[i]) + wd * ref[i];
        if (momentum != 0) {
          // PyTorch: the first step's buffer is d itself, later ones momentum * buf + d.
          buf[i] = step == 0 ? d : momentum * buf[i] + d;
          d = buf[i];
        }
        ref[i] -= lr * d;
      }
      check_close(p, ref, 1e-5, 1e-6);
    }
  }
}

TEST_CASE("Adam with L2 weight decay matches the reference update", "[optimizer]") {
  std::mt19937 rng(3);
  const std::size_t n = 1500;
  for (const double wd : {0.0, 1e-2}) {
    INFO("weight_decay " << wd);
    OptimizerConfig c;
    c.type = "adam";
    c.lr = 1e-2;
    c.beta1 = 0.9;
    c.beta2 = 0.999;
    c.eps = 1e-8;
    c.weight_decay = wd;
    const auto opt = make_optimizer(c);
    std::vector<float> p = random_vector(n, rng);
    std::vector<double> ref(p.begin(), p.end()), m(n, 0.0), v(n, 0.0);
    OptimizerState s;
    for (int t = 1; t <= 6; ++t) {
      const std::vector<float> g = random_vector(n, rng, 0.1f);
      opt->update(p, g, s);
      CHECK(s.step == uint64_t(t));
      for (std::size_t i = 0; i < n; ++i) {
        const double d = double(g[i]) + wd * ref[i];
        m[i] = c.beta1 * m[i] + (1 - c.beta1) * d;
        v[i] = c.beta2 * v[i] + (1 - c.beta2) * d * d;
        const double mhat = m[i] / (1 - std::pow(c.beta1, t));
        const double vhat = v[i] / (1 - std::pow(c.beta2, t));
        ref[i] -= c.lr * mhat / (std::sqrt(vhat) + c.eps);
      }
      check_close(p, ref, 1e-5, 1e-5);
    }
  }
}

TEST_CASE("optimizer state belongs to the chunk it is passed with", "[optimizer]") {
  const auto opt = make_optimizer(sgd(0.1, 0.9, 0));
  std::vector<float> a{1.0f}, b{1.0f};
  const std::vector<float> g{1.0f};
  OptimizerState sa, sb;
  opt->update(a, g, sa);
  opt->update(a, g, sa);
  opt->update(b, g, sb);
  // a: buf 1 then 1.9 -> 1 - 0.1 - 0.19; b: one fresh step -> 1 - 0.1.
  CHECK(a[0] == Approx(0.71).epsilon(1e-6));
  CHECK(b[0] == Approx(0.9).epsilon(1e-6));
}

TEST_CASE("Adam given a state without its second moment starts both moments afresh",
          "[optimizer]") {
  OptimizerConfig c;
  c.type = "adam";
  c.lr = 0.1;
  const auto opt = make_optimizer(c);
  std::vector<float> fresh{1.0f, -2.0f}, other{1.0f, -2.0f};
  const std::vector<float> g{0.5f, 0.25f};
  OptimizerState none, sgd_momentum;
  sgd_momentum.m = {3.0f, 3.0f};  // what SGD momentum leaves: no `v`
  opt->update(fresh, g, none);
  opt->update(other, g, sgd_momentum);
  CHECK(other == fresh);
  CHECK(sgd_momentum.v.size() == 2);
}

TEST_CASE("step decay multiplies the learning rate every lr_decay_every updates", "[server]") {
  psrt::OptimizerConfig c;
  c.type = "sgd";
  c.lr = 0.5;
  c.momentum = 0;
  c.weight_decay = 0;
  c.lr_decay = 0.5;
  c.lr_decay_every = 2;
  const auto opt = psrt::make_optimizer(c);
  psrt::OptimizerState state;
  std::vector<float> p{8.0f};
  const std::vector<float> g{1.0f};
  const float expected_lr[] = {0.5f, 0.5f, 0.25f, 0.25f, 0.125f};
  float want = 8.0f;
  for (float lr : expected_lr) {
    opt->update(p, g, state);
    want -= lr;
    CHECK(p[0] == want);
  }
  CHECK(state.step == 5);
}
