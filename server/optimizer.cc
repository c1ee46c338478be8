#include "server/optimizer.h"

#include <cmath>

#include "server/update_kernels.h"

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
      // A buffer restored from a run with momentum is not this run's: kept, it was checkpointed
      // again and applied, stale, by a later run with momentum.
      if (!s.m.empty()) std::vector<float>().swap(s.m);
      kernels::sgd(p.data(), g.data(), n, lr_, wd_);
      ++s.step;
      return;
    }
    if (s.m.size() != n) s.m.assign(n, 0.0f);
    kernels::sgd_momentum(p.data(), g.data(), s.m.data(), n, lr_, wd_, momentum_);
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
    if (s.m.size() != n || s.v.size() != n) {
      s.m.assign(n, 0.0f);
      s.v.assign(n, 0.0f);
    }
    const double lr = scheduled_lr(config_, s.step);
    ++s.step;
    const double t = double(s.step);
    kernels::AdamStep step;
    step.step_size = float(lr / (1.0 - std::pow(b1_, t)));
    step.inv_bias2 = float(1.0 / std::sqrt(1.0 - std::pow(b2_, t)));
    step.b1 = float(b1_);
    step.b2 = float(b2_);
    step.eps = eps_;
    step.wd = wd_;
    kernels::adam(p.data(), g.data(), s.m.data(), s.v.data(), n, step);
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
  kernels::mean_into(out.data(), inputs.data(), inputs.size(), out.size());
}

}  // namespace psrt
