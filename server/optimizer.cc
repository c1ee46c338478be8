#include "server/optimizer.h"

#include <cmath>

namespace psrt {

namespace {

// Step decay: the learning rate is multiplied by `decay` every `every` updates (never when 0).
double scheduled_lr(const OptimizerConfig& c, uint64_t step) {
  if (c.lr_decay_every <= 0 || c.lr_decay == 1.0) return c.lr;
  return c.lr * std::pow(c.lr_decay, double(step / uint64_t(c.lr_decay_every)));
}

class Sgd final : public Optimizer {
 public:
  explicit Sgd(const OptimizerConfig& c)
      : config_(c), momentum_(float(c.momentum)), wd_(float(c.weight_decay)) {}

  void update(std::span<float> p, std::span<const float> g, OptimizerState& s) const override {
    const std::size_t n = p.size();
    const float lr_ = float(scheduled_lr(config_, s.step));
    if (momentum_ == 0) {
      for (std::size_t i = 0; i < n; ++i) p[i] -= lr_ * (g[i] + wd_ * p[i]);
      ++s.step;
      return;
    }
    if (s.m.size() != n) s.m.assign(n, 0.0f);
    float* buf = s.m.data();
    for (std::size_t i = 0; i < n; ++i) {
      const float d = g[i] + wd_ * p[i];
      buf[i] = momentum_ * buf[i] + d;
      p[i] -= lr_ * buf[i];
    }
    ++s.step;
  }

 private:
  OptimizerConfig config_;
  float momentum_, wd_;
};

class Adam final : public Optimizer {
 public:
  explicit Adam(const OptimizerConfig& c)
      : config_(c), b1_(c.beta1), b2_(c.beta2), eps_(float(c.eps)), wd_(float(c.weight_decay)) {}

  void update(std::span<float> p, std::span<const float> g, OptimizerState& s) const override {
    const std::size_t n = p.size();
    if (s.m.size() != n) {
      s.m.assign(n, 0.0f);
      s.v.assign(n, 0.0f);
    }
    const double lr = scheduled_lr(config_, s.step);
    ++s.step;
    const double t = double(s.step);
    const float step_size = float(lr / (1.0 - std::pow(b1_, t)));
    const float inv_bias2 = float(1.0 / std::sqrt(1.0 - std::pow(b2_, t)));
    const float b1 = float(b1_), b2 = float(b2_);
    float* m = s.m.data();
    float* v = s.v.data();
    for (std::size_t i = 0; i < n; ++i) {
      const float d = g[i] + wd_ * p[i];
      m[i] = b1 * m[i] + (1.0f - b1) * d;
      v[i] = b2 * v[i] + (1.0f - b2) * d * d;
      p[i] -= step_size * m[i] / (std::sqrt(v[i]) * inv_bias2 + eps_);
    }
  }

 private:
  OptimizerConfig config_;
  double b1_, b2_;
  float eps_, wd_;
};

}  // namespace

std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& config) {
  if (config.type == "adam") return std::make_unique<Adam>(config);
  return std::make_unique<Sgd>(config);
}

void aggregate_mean(std::span<float> out, const std::vector<const float*>& inputs) {
  const std::size_t n = out.size();
  float* o = out.data();
  if (inputs.empty()) return;
  const float* first = inputs[0];
  for (std::size_t i = 0; i < n; ++i) o[i] = first[i];
  for (std::size_t w = 1; w < inputs.size(); ++w) {
    const float* in = inputs[w];
    for (std::size_t i = 0; i < n; ++i) o[i] += in[i];
  }
  const float scale = 1.0f / float(inputs.size());
  for (std::size_t i = 0; i < n; ++i) o[i] *= scale;
}

}  // namespace psrt
