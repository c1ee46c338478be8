// The GPU layers behind make_gpu_layer: thin wrappers that hold a layer's geometry and device
// tensors and call the kernels of gpu_layers.h.
#include "engine/cuda/gpu_layer.h"

#include <stdexcept>
#include <string>

#include "engine/conv2d.h"
#include "engine/cuda/gpu_layers.h"
#include "engine/dropout.h"
#include "engine/flatten.h"
#include "engine/linear.h"
#include "engine/maxpool2d.h"
#include "engine/relu.h"

namespace psrt::engine::cuda {
namespace {

std::size_t elements(int n, std::size_t per_sample) {
  return static_cast<std::size_t>(n > 0 ? n : 0) * per_sample;
}

// Weight and bias with their gradients; the gradients start at zero, as the CPU layers' do.
struct WeightBias {
  WeightBias(std::size_t weight, std::size_t bias) : w(weight), b(bias), dw(weight), db(bias) {
    dw.zero();
    db.zero();
  }
  std::vector<GpuParam> params() { return {{&w, &dw}, {&b, &db}}; }

  DeviceBuffer w, b, dw, db;
};

class GpuLinear final : public GpuLayer {
 public:
  explicit GpuLinear(const Linear& cpu)
      : in_(static_cast<int>(cpu.in_size())),
        out_(static_cast<int>(cpu.out_size())),
        t_(cpu.in_size() * cpu.out_size(), cpu.out_size()) {}

  std::vector<GpuParam> params() override { return t_.params(); }
  void forward(GpuContext& ctx, const float* in, float* out, int n, bool /*training*/,
               float* /*workspace*/) override {
    linear_forward(ctx, in, t_.w.data(), t_.b.data(), out, n, in_, out_);
  }
  bool fuses_relu() const override { return true; }
  void forward_relu(GpuContext& ctx, const float* in, float* pre, float* relu_out, int n,
                    float* /*workspace*/) override {
    linear_forward_relu(ctx, in, t_.w.data(), t_.b.data(), pre, relu_out, n, in_, out_);
  }
  void backward(GpuContext& ctx, const float* in, const float* /*out*/, const float* dout,
                float* din, int n, float* /*workspace*/) override {
    linear_backward(ctx, in, dout, t_.w.data(), din, t_.dw.data(), t_.db.data(), n, in_, out_);
  }

 private:
  int in_, out_;
  WeightBias t_;
};

class GpuConv2d final : public GpuLayer {
 public:
  explicit GpuConv2d(const Conv2d& cpu)
      : g_(cpu.geom()), t_(out_channels() * g_.col_rows(), out_channels()) {}

  std::vector<GpuParam> params() override { return t_.params(); }
  std::size_t workspace(int n) const override { return conv2d_workspace(g_, n); }
  void forward(GpuContext& ctx, const float* in, float* out, int n, bool /*training*/,
               float* workspace) override {
    conv2d_forward(ctx, g_, in, t_.w.data(), t_.b.data(), out, n, workspace);
  }
  bool fuses_relu() const override { return true; }
  void forward_relu(GpuContext& ctx, const float* in, float* pre, float* relu_out, int n,
                    float* workspace) override {
    conv2d_forward_relu(ctx, g_, in, t_.w.data(), t_.b.data(), pre, relu_out, n, workspace);
  }
  // Recomputes the im2col columns (the workspace is shared), where the CPU layer may cache them.
  void backward(GpuContext& ctx, const float* in, const float* /*out*/, const float* dout,
                float* din, int n, float* workspace) override {
    conv2d_backward(ctx, g_, in, dout, t_.w.data(), din, t_.dw.data(), t_.db.data(), n, workspace);
  }

 private:
  std::size_t out_channels() const { return static_cast<std::size_t>(g_.out_c); }

  ConvGeom g_;
  WeightBias t_;
};

class GpuRelu final : public GpuLayer {
 public:
  explicit GpuRelu(std::size_t size) : size_(size) {}
  void forward(GpuContext&, const float* in, float* out, int n, bool, float*) override {
    relu_forward(in, out, elements(n, size_));
  }
  void backward(GpuContext&, const float* /*in*/, const float* out, const float* dout, float* din,
                int n, float*) override {
    if (din != nullptr) relu_backward(out, dout, din, elements(n, size_));
  }

 private:
  std::size_t size_;
};

class GpuMaxPool2d final : public GpuLayer {
 public:
  explicit GpuMaxPool2d(const PoolGeom& g) : g_(g) {}
  void forward(GpuContext&, const float* in, float* out, int n, bool, float*) override {
    maxpool2d_forward(g_, in, out, n);
  }
  void backward(GpuContext&, const float* in, const float* out, const float* dout, float* din,
                int n, float*) override {
    if (din != nullptr) maxpool2d_backward(g_, in, out, dout, din, n);
  }

 private:
  PoolGeom g_;
};

// The buffers already hold one row per sample: flatten is a copy, as on the CPU.
class GpuFlatten final : public GpuLayer {
 public:
  explicit GpuFlatten(std::size_t size) : size_(size) {}
  void forward(GpuContext&, const float* in, float* out, int n, bool, float*) override {
    copy_on_device(out, in, elements(n, size_));
  }
  void backward(GpuContext&, const float*, const float*, const float* dout, float* din, int n,
                float*) override {
    if (din != nullptr) copy_on_device(din, dout, elements(n, size_));
  }

 private:
  std::size_t size_;
};

// Mirrors Dropout step for step: every training forward with p > 0 draws the mask of the next
// step, dropout_step_seed(seed, step); backward reuses the last one; evaluation is the identity.
class GpuDropout final : public GpuLayer {
 public:
  explicit GpuDropout(const Dropout& cpu)
      : size_(cpu.in_size()),
        p_(cpu.p()),
        seed_(cpu.seed()),
        next_step_(cpu.next_step()),
        step_seed_(cpu.step_seed()) {}

  void forward(GpuContext&, const float* in, float* out, int n, bool training, float*) override {
    if (!training || p_ == 0.0f) {
      copy_on_device(out, in, elements(n, size_));
      return;
    }
    step_seed_ = dropout_step_seed(seed_, next_step_++);
    dropout_forward(in, out, elements(n, size_), p_, step_seed_);
  }
  void backward(GpuContext&, const float*, const float*, const float* dout, float* din, int n,
                float*) override {
    if (din == nullptr) return;
    if (p_ == 0.0f) {
      copy_on_device(din, dout, elements(n, size_));
      return;
    }
    dropout_backward(dout, din, elements(n, size_), p_, step_seed_);
  }
  void reseed_randomness(uint64_t seed) override {  // as Dropout::reseed
    seed_ = seed;
    next_step_ = 0;
    step_seed_ = dropout_step_seed(seed_, 0);
  }
  void skip_random_steps(uint64_t steps) override { next_step_ = steps; }
  uint64_t mask_seed() const override { return step_seed_; }
  void set_mask_seed(uint64_t step_seed) override { step_seed_ = step_seed; }

 private:
  std::size_t size_;
  float p_;
  uint64_t seed_, next_step_, step_seed_;
};

}  // namespace

std::unique_ptr<GpuLayer> make_gpu_layer(const Layer& cpu) {
  if (const auto* l = dynamic_cast<const Linear*>(&cpu)) return std::make_unique<GpuLinear>(*l);
  if (const auto* c = dynamic_cast<const Conv2d*>(&cpu)) return std::make_unique<GpuConv2d>(*c);
  if (dynamic_cast<const Relu*>(&cpu) != nullptr) return std::make_unique<GpuRelu>(cpu.in_size());
  if (const auto* p = dynamic_cast<const MaxPool2d*>(&cpu)) {
    return std::make_unique<GpuMaxPool2d>(p->geom());
  }
  if (dynamic_cast<const Flatten*>(&cpu) != nullptr) {
    return std::make_unique<GpuFlatten>(cpu.in_size());
  }
  if (const auto* d = dynamic_cast<const Dropout*>(&cpu)) return std::make_unique<GpuDropout>(*d);
  throw std::invalid_argument("GPU network: layer " + cpu.name() + " of kind " +
                              std::string(cpu.kind()) + " has no GPU version");
}

}  // namespace psrt::engine::cuda
