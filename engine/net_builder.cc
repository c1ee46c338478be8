#include "engine/net_builder.h"

#include <utility>

#include "core/status.h"
#include "engine/conv2d.h"
#include "engine/dropout.h"
#include "engine/flatten.h"
#include "engine/maxpool2d.h"
#include "engine/relu.h"
#include "engine/softmax_xent.h"

namespace psrt::engine {

NetBuilder::NetBuilder(std::string arch, const NetSpec& spec, bool flat)
    : arch_(std::move(arch)),
      c_(spec.channels),
      h_(spec.height),
      w_(spec.width),
      width_(std::size_t(spec.channels) * std::size_t(spec.height) * std::size_t(spec.width)),
      flat_(flat) {}

void NetBuilder::conv(int out_c, int kernel, int stride, int pad) {
  const std::string name = "conv" + std::to_string(conv_ + 1);
  if (flat_) fail(name, "comes after the network was flattened (a conv needs an image)");
  const ConvGeom g{c_, h_, w_, out_c, kernel, stride, pad};
  if (!g.valid()) {
    fail(name, "kernel " + std::to_string(kernel) + " with pad " + std::to_string(pad) +
                   " does not fit its input " + shape());
  }
  check_output(name, double(g.out_size()));
  check_output(name + "'s unfolded input", double(g.col_rows()) * double(g.col_cols()));
  count_weights(name, double(g.col_rows()) * out_c + out_c);
  ++conv_;
  add(std::make_unique<Conv2d>(name, g));
  c_ = out_c;
  h_ = g.out_h();
  w_ = g.out_w();
}

void NetBuilder::pool(int kernel, int stride) {
  const std::string name = "pool" + std::to_string(pool_ + 1);
  if (flat_) fail(name, "comes after the network was flattened (a pool needs an image)");
  const PoolGeom g{c_, h_, w_, kernel, stride};
  if (!g.valid()) {
    fail(name, "window " + std::to_string(kernel) + " does not fit its input " + shape());
  }
  ++pool_;
  add(std::make_unique<MaxPool2d>(name, g));
  h_ = g.out_h();
  w_ = g.out_w();
}

void NetBuilder::relu() {
  add(std::make_unique<Relu>("relu" + std::to_string(++relu_), width_));
}

void NetBuilder::flatten() {
  if (flat_) fail("flatten", "comes after the network was flattened (by a flatten or an fc)");
  flat_ = true;
  add(std::make_unique<Flatten>("flatten", width_));
}

void NetBuilder::fc(std::size_t out, LinearInit init) {
  const std::string name = "fc" + std::to_string(fc_ + 1);
  if (!flat_) flatten();
  check_output(name, double(out));
  count_weights(name, double(width_) * double(out) + double(out));
  ++fc_;
  add(std::make_unique<Linear>(name, width_, out, init));
}

void NetBuilder::dropout(float p) {
  if (!(p >= 0.0f && p < 1.0f)) {
    fail("dropout" + std::to_string(dropout_ + 1),
         "probability " + std::to_string(p) + " (must be in [0, 1))");
  }
  if (p > 0.0f) {
    add(std::make_unique<Dropout>("dropout" + std::to_string(++dropout_), width_, p));
  }
}

ArchLayers NetBuilder::finish(std::size_t classes) {
  if (width_ != classes) {
    const std::string k = std::to_string(classes);
    fail("loss", "the last layer gives " + std::to_string(width_) +
                     " floats per sample, not one per class (" + k + "): end with {fc: " + k + "}");
  }
  add(std::make_unique<SoftmaxXent>("loss", classes));
  out_.name = arch_;
  return std::move(out_);
}

void NetBuilder::add(std::unique_ptr<Layer> layer) {
  width_ = layer->out_size();
  out_.layers.push_back(std::move(layer));
}

void NetBuilder::count_weights(const std::string& layer, double weights) {
  weights_ += weights;
  if (weights_ > double(kMaxWeights)) {
    fail(layer, "brings the network to " + std::to_string(int64_t(weights_)) +
                    " parameters; at most " + std::to_string(kMaxWeights) + " allowed");
  }
}

void NetBuilder::check_output(const std::string& layer, double floats) const {
  if (floats > double(kMaxSampleFloats)) {
    fail(layer, "makes " + std::to_string(int64_t(floats)) + " floats per sample; at most " +
                    std::to_string(kMaxSampleFloats) + " allowed");
  }
}

void NetBuilder::fail(const std::string& layer, const std::string& what) const {
  // The key to change: a custom network's layer list, else the built-in network's settings.
  throw ConfigError((arch_ == "custom" ? std::string("model.layers") : "model.arch " + arch_) +
                    ": " + layer + ": " + what);
}

std::string NetBuilder::shape() const {
  return std::to_string(c_) + "x" + std::to_string(h_) + "x" + std::to_string(w_);
}

}  // namespace psrt::engine
