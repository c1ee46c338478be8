// The convolutional architectures: LeNet-5 and the small VGG-style net.
#include <string>

#include "core/status.h"
#include "engine/arch_builders.h"
#include "engine/conv2d.h"
#include "engine/dropout.h"
#include "engine/flatten.h"
#include "engine/linear.h"
#include "engine/maxpool2d.h"
#include "engine/relu.h"
#include "engine/softmax_xent.h"

namespace psrt::engine {
namespace {

// Appends layers while tracking the NCHW shape of one sample.
class Stack {
 public:
  Stack(std::string arch, const NetSpec& spec)
      : arch_(std::move(arch)), c_(spec.channels), h_(spec.height), w_(spec.width) {}

  void conv(int out_c, int kernel, int pad) {
    const ConvGeom g{c_, h_, w_, out_c, kernel, 1, pad};
    if (!g.valid()) too_small("conv" + std::to_string(conv_ + 1));
    out_.layers.push_back(std::make_unique<Conv2d>("conv" + std::to_string(++conv_), g));
    c_ = out_c;
    h_ = g.out_h();
    w_ = g.out_w();
    relu();
  }
  void pool() {
    const PoolGeom g{c_, h_, w_, 2, 2};
    if (!g.valid()) too_small("pool" + std::to_string(pool_ + 1));
    out_.layers.push_back(std::make_unique<MaxPool2d>("pool" + std::to_string(++pool_), g));
    h_ = g.out_h();
    w_ = g.out_w();
  }
  void flatten() {
    width_ = static_cast<std::size_t>(c_) * h_ * w_;
    out_.layers.push_back(std::make_unique<Flatten>("flatten", width_));
  }
  void fc(std::size_t out, bool last) {
    out_.layers.push_back(
        std::make_unique<Linear>("fc" + std::to_string(++fc_), width_, out,
                                 last ? LinearInit::kXavierUniform : LinearInit::kHeNormal));
    width_ = out;
    if (!last) relu();
  }
  void dropout(float p) {
    if (p > 0.0f) out_.layers.push_back(std::make_unique<Dropout>("dropout1", width_, p));
  }
  ArchLayers finish(std::size_t classes) {
    out_.layers.push_back(std::make_unique<SoftmaxXent>("loss", classes));
    out_.name = arch_;
    return std::move(out_);
  }

 private:
  void relu() {
    const std::size_t size = out_.layers.back()->out_size();
    out_.layers.push_back(std::make_unique<Relu>("relu" + std::to_string(++relu_), size));
  }
  [[noreturn]] void too_small(const std::string& layer) const {
    throw ConfigError("network spec: input " + std::to_string(c_) + "x" + std::to_string(h_) + "x" +
                      std::to_string(w_) + " at " + layer + " is too small for arch '" + arch_ +
                      "'");
  }

  std::string arch_;
  int c_, h_, w_;
  std::size_t width_ = 0;
  int conv_ = 0, pool_ = 0, fc_ = 0, relu_ = 0;
  ArchLayers out_;
};

}  // namespace

ArchLayers lenet5_layers(const NetSpec& spec) {
  Stack s("lenet5", spec);
  s.conv(6, 5, 2);
  s.pool();
  s.conv(16, 5, 0);
  s.pool();
  s.flatten();
  s.fc(120, false);
  s.fc(84, false);
  s.fc(static_cast<std::size_t>(spec.classes), true);
  return s.finish(static_cast<std::size_t>(spec.classes));
}

ArchLayers vgg_small_layers(const NetSpec& spec) {
  if (!(spec.dropout >= 0.0f && spec.dropout < 1.0f)) {
    throw ConfigError("network spec: dropout = " + std::to_string(spec.dropout) +
                      " (must be in [0, 1))");
  }
  Stack s("vgg-small", spec);
  s.conv(32, 3, 1);
  s.conv(32, 3, 1);
  s.pool();
  s.conv(64, 3, 1);
  s.conv(64, 3, 1);
  s.pool();
  s.flatten();
  s.fc(256, false);
  s.dropout(spec.dropout);
  s.fc(static_cast<std::size_t>(spec.classes), true);
  return s.finish(static_cast<std::size_t>(spec.classes));
}

}  // namespace psrt::engine
