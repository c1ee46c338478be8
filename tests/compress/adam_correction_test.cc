// Adam correction: the worker runs Adam's moments on its gradient and error feedback compresses
// Adam's direction (compress/error_feedback.h).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "compress/cpu_kernels.h"
#include "compress/error_feedback.h"
#include "test_util.h"

namespace psrt::compress {

namespace {

CodecConfig adam_config(const char* name) {
  CodecConfig c = testing::config_for(name);
  c.adam = true;
  c.calibration_iters = 2;
  c.warmup_iters = 3;
  c.dense_below = 0;
  return c;
}

// Adam's moments and direction for every element, as the codecs' kernel computes them: single
// precision, the bias corrections in double from the betas (adam_step), eps 1e-8.
class ReferenceAdam {
 public:
  explicit ReferenceAdam(size_t n) : m_(n, 0.0f), v_(n, 0.0f) {}

  void begin_step(int64_t t) {  // iteration t is Adam's step t + 1
    const double step = double(t + 1);
    c1_ = float(1.0 / (1.0 - std::pow(0.9, step)));
    c2_ = float(1.0 / std::sqrt(1.0 - std::pow(0.999, step)));
  }
  float direction(size_t k, float g) {  // updates element k's moments
    m_[k] = 0.9f * m_[k] + (1.0f - 0.9f) * g;
    v_[k] = 0.999f * v_[k] + (1.0f - 0.999f) * g * g;
    return c1_ * m_[k] / (std::sqrt(v_[k]) * c2_ + 1e-8f);
  }
  float m(size_t k) const { return m_[k]; }
  float v(size_t k) const { return v_[k]; }

 private:
  std::vector<float> m_, v_;
  float c1_ = 0.0f, c2_ = 0.0f;
};

}  // namespace

TEST_CASE("each step: Adam's m, v and direction, residual += direction, sent + residual exact",
          "[compress][adam]") {
  const size_t n = 12000;
  const size_t half = 5000;  // two chunks of one tensor, encoded in turn
  for (const char* name : {"laco", "topk", "graddrop", "signsgd"}) {
    INFO(name);
    auto codec = testing::make(adam_config(name));
    REQUIRE(codec != nullptr);
    const auto* ef = dynamic_cast<const ErrorFeedback*>(codec.get());
    REQUIRE(ef != nullptr);
    CHECK(ef->adam());
    auto state = codec->make_state(TensorInfo{.num_elements = int64_t(n)});
    ReferenceAdam ref(n);
    for (int64_t t = 0; t < 12; ++t) {
      const auto g = testing::gaussian(n, 700 + uint64_t(t), 0.01f);
      ref.begin_step(t);
      for (auto [offset, len] : {std::pair<size_t, size_t>{0, half}, {half, n - half}}) {
        const auto residual = ErrorFeedback::residual(*state);
        std::vector<float> corrected(len);
        for (size_t i = 0; i < len; ++i) {
          const size_t k = offset + i;
          corrected[i] = residual[k] + ref.direction(k, g[k]);
        }
        const auto decoded = testing::encode_chunk(*codec, *state, g, offset, len, t);
        REQUIRE(decoded.has_value());
        const std::vector<float>& sent = *decoded;
        const auto after = ErrorFeedback::residual(*state);
        const auto mom = ErrorFeedback::momentum_buffer(*state);
        const auto sec = ErrorFeedback::second_moment(*state);
        for (size_t i = 0; i < len; ++i) {
          REQUIRE(mom[offset + i] == ref.m(offset + i));
          REQUIRE(sec[offset + i] == ref.v(offset + i));
          if (std::string(name) == "signsgd") {  // v - scale rounds (compress/README.md)
            REQUIRE(sent[i] + after[offset + i] == Approx(corrected[i]).margin(1e-4));
          } else {
            REQUIRE(sent[i] + after[offset + i] == corrected[i]);  // error feedback, exactly
          }
        }
      }
    }
  }
}

// Why the correction exists. Every element's gradient is a steady 1e-3 plus noise, the setting
// in which dense Adam takes steps of about lr. LACO at density 0.01 with error feedback hands each
// element to the servers as a burst of its accumulated residual every ~100 iterations: Adam on
// the servers then sees a second moment inflated by about that factor and moves the parameters
// far less than dense Adam; with the correction the sent directions add up to Adam's.
TEST_CASE("Adam correction moves parameters as dense Adam does, servers' Adam on LACO does not",
          "[compress][adam]") {
  const size_t n = 20000;
  const int iterations = 300;
  const double b1 = 0.9, b2 = 0.999, eps = 1e-8;
  auto adam_apply = [&](std::vector<double>& p, std::vector<double>& m, std::vector<double>& v,
                        const std::vector<float>& g, int t) {
    const double c1 = 1.0 / (1.0 - std::pow(b1, t)), c2 = 1.0 / std::sqrt(1.0 - std::pow(b2, t));
    for (size_t i = 0; i < p.size(); ++i) {
      m[i] = b1 * m[i] + (1 - b1) * g[i];
      v[i] = b2 * v[i] + (1 - b2) * double(g[i]) * g[i];
      p[i] -= c1 * m[i] / (std::sqrt(v[i]) * c2 + eps);  // lr 1: p counts steps
    }
  };
  std::vector<double> dense(n, 0), dm(n, 0), dv(n, 0);
  std::vector<double> server(n, 0), sm(n, 0), sv(n, 0);
  std::vector<double> worker(n, 0);
  CodecConfig plain = adam_config("laco");
  plain.adam = false;
  plain.density = 0.01;
  auto laco = testing::make(plain);
  auto corrected = testing::make(adam_config("laco"));
  auto ls = laco->make_state(TensorInfo{.num_elements = int64_t(n)});
  auto cs = corrected->make_state(TensorInfo{.num_elements = int64_t(n)});
  std::vector<uint8_t> payload;
  std::vector<float> sent(n);
  for (int t = 0; t < iterations; ++t) {
    auto g = testing::gaussian(n, 900 + uint64_t(t), 1e-4f);
    for (float& x : g) x += 1e-3f;
    adam_apply(dense, dm, dv, g, t + 1);
    REQUIRE(laco->encode(*ls, ChunkInput{.values = g, .iteration = t}, payload).is_ok());
    REQUIRE(laco->decode(payload, sent).is_ok());
    adam_apply(server, sm, sv, sent, t + 1);
    REQUIRE(corrected->encode(*cs, ChunkInput{.values = g, .iteration = t}, payload).is_ok());
    REQUIRE(corrected->decode(payload, sent).is_ok());
    for (size_t i = 0; i < n; ++i) worker[i] -= sent[i];  // the servers' SGD, lr 1
  }
  auto mean = [](const std::vector<double>& p) {
    double s = 0;
    for (double x : p) s += x;
    return s / double(p.size());
  };
  const double d = mean(dense), s = mean(server), w = mean(worker);
  INFO("mean movement: dense Adam " << d << ", servers' Adam on LACO " << s
                                    << ", Adam correction " << w);
  CHECK(d == Approx(-iterations).epsilon(0.05));  // steady gradient: a step of ~lr each
  CHECK(w == Approx(d).epsilon(0.1));             // what waits in the residual is < 10%
  CHECK(std::fabs(s) < 0.5 * std::fabs(d));       // the inflated second moment
}

TEST_CASE("Adam correction: t counts iterations, not chunks, config errors", "[compress][adam]") {
  auto codec = testing::make(adam_config("topk"));
  auto state = codec->make_state(TensorInfo{.num_elements = 100});
  std::vector<uint8_t> payload;
  const std::vector<float> g(50, 1.0f);
  // Two chunks of iteration 0: both see t = 1, so the first direction is m/(1-b1) / sqrt(v/(1-b2))
  // = 1 for every element (with t = 2 for the second chunk it would be about 0.53).
  for (int64_t offset : {0, 50}) {
    REQUIRE(codec->encode(*state, ChunkInput{.offset = offset, .values = g}, payload).is_ok());
    std::vector<float> sent(50);
    REQUIRE(codec->decode(payload, sent).is_ok());
    const auto r = ErrorFeedback::residual(*state);
    for (size_t i = 0; i < 50; ++i) {
      INFO(offset + int64_t(i));
      CHECK(sent[i] + r[size_t(offset) + i] == Approx(1.0f).epsilon(1e-5));
    }
  }
  CodecConfig bad = adam_config("laco");
  bad.error_feedback = false;
  CHECK_FALSE(make_codec(bad).is_ok());
  bad = adam_config("laco");
  bad.momentum = 0.9;
  CHECK_FALSE(make_codec(bad).is_ok());
  bad = adam_config("none");
  CHECK_FALSE(make_codec(bad).is_ok());
  bad = adam_config("laco");
  bad.adam_beta2 = 1.0;
  CHECK_FALSE(make_codec(bad).is_ok());
}

// adam_residual_cap: what an element owes is clamped to +-cap steps of Adam's direction, so one
// that waited long (a steady small gradient, a unit step each iteration, a key too small to be
// sent) sends at most cap steps at once when it is finally selected.
TEST_CASE(
    "Adam correction with a residual cap: residual + direction clamped, sent + residual exact",
    "[compress][adam]") {
  for (int workers : {1, 4}) {  // both branches of the kernel: clamp(uncapped) exactly
    INFO("workers " << workers);
    const size_t n = 3000;
    std::vector<float> m(n, 0.0f), v(n, 0.0f), acc(n, 0.0f);
    size_t at_cap = 0;
    for (uint64_t t = 1; t <= 20; ++t) {
      const auto g = testing::gaussian(n, 900 + t, 0.01f);
      std::vector<float> m2 = m, v2 = v, free = acc;
      adam_add_and_moments(m2, v2, adam_step(0.9, 0.999, 1e-8, t, workers), free, g);
      AdamStep capped = adam_step(0.9, 0.999, 1e-8, t, workers);
      capped.cap = 3.0f;
      const ChunkMoments mo = adam_add_and_moments(m, v, capped, acc, g);
      at_cap = 0;
      for (size_t i = 0; i < n; ++i) {
        REQUIRE(acc[i] == std::clamp(free[i], -3.0f, 3.0f));
        at_cap += std::fabs(acc[i]) == 3.0f;
      }
      CHECK(mo.max_abs <= 3.0f);
    }
    CHECK(at_cap > n / 10);  // the clamp was exercised (a random walk of unit steps)
  }
  for (const char* name : {"laco", "topk"}) {
    INFO(name);
    CodecConfig c = adam_config(name);
    c.adam_residual_cap = 2.5;
    if (std::string(name) == "laco") {  // as under Adam by default: ternary, gradient's units
      c.quant_bits = 1;
      c.adam_select_gradient = true;
    }
    auto codec = testing::make(c);
    REQUIRE(codec != nullptr);
    const size_t n = 4000;
    auto state = codec->make_state(TensorInfo{.num_elements = int64_t(n)});
    ReferenceAdam ref(n);
    size_t at_cap = 0;
    for (int64_t t = 0; t < 15; ++t) {
      auto g = testing::gaussian(n, 300 + uint64_t(t), 0.01f);
      for (size_t i = 0; i < n / 2; ++i) g[i] = 1e-4f;  // steady: a unit step every iteration
      ref.begin_step(t);
      const auto before = ErrorFeedback::residual(*state);
      std::vector<float> corrected(n);
      for (size_t k = 0; k < n; ++k) {
        corrected[k] = std::clamp(before[k] + ref.direction(k, g[k]), -2.5f, 2.5f);
      }
      const auto sent = testing::encode_chunk(*codec, *state, g, 0, n, t);
      REQUIRE(sent.has_value());
      const auto after = ErrorFeedback::residual(*state);
      at_cap = 0;
      for (size_t k = 0; k < n; ++k) {
        // Ternary's residual subtraction rounds (compress/README.md, "Ternary values").
        REQUIRE((*sent)[k] + after[k] == Approx(corrected[k]).epsilon(1e-5).margin(1e-6));
        at_cap += std::fabs(after[k]) == 2.5f;
      }
    }
    CHECK(at_cap > n / 4);  // most steady elements wait at the cap, not at 14 steps
  }
  CodecConfig bad = adam_config("laco");
  bad.adam_residual_cap = -1;
  CHECK_FALSE(make_codec(bad).is_ok());
}

// The second moment rescaled to W workers' global batch: a steady gradient has no variance to
// shrink (the same direction as W = 1); pure noise has nothing else, so v shrinks by W and the
// direction grows by nearly sqrt(W).
TEST_CASE("Adam correction with W workers: the variance part of v shrinks by W",
          "[compress][adam]") {
  const size_t n = 4000;
  auto run = [&](int workers, float mean, float sigma) {
    std::vector<float> m(n, 0.0f), v(n, 0.0f), acc(n, 0.0f);
    for (uint64_t t = 1; t <= 200; ++t) {
      auto g = testing::gaussian(n, 40 + t, sigma);
      for (float& x : g) x += mean;
      std::fill(acc.begin(), acc.end(), 0.0f);
      adam_add_and_moments(m, v, adam_step(0.9, 0.999, 1e-8, t, workers), acc, g);
    }
    double s = 0;
    for (float x : acc) s += std::fabs(x);
    return s / double(n);
  };
  CHECK(run(4, 1e-3f, 0.0f) == Approx(run(1, 1e-3f, 0.0f)).epsilon(1e-5));
  const double one = run(1, 0.0f, 1e-3f), four = run(4, 0.0f, 1e-3f);
  INFO("mean |direction|: W = 1 " << one << ", W = 4 " << four);
  // Nearly sqrt(W) = 2: m's own noise (about (1-b1)/(1+b1) of the variance) counts as mean.
  CHECK(four / one > 1.6);
  CHECK(four / one < 2.0);
}

}  // namespace psrt::compress
