// Internal to the engine: appends layers in forward order while tracking one sample's NCHW shape
// (its width once flattened), naming them conv1, relu1, pool1, flatten, fc1, dropout1, ... as the
// tensor keys expect. Every shape is checked before its layer is made: a window that does not fit
// its input, a network over kMaxWeights parameters or a layer over kMaxSampleFloats per sample is a
// ConfigError naming the layer (nothing has been allocated for it yet).
#pragma once

#include <cstddef>
#include <string>

#include "engine/arch_builders.h"
#include "engine/linear.h"

namespace psrt::engine {

class NetBuilder {
 public:
  static constexpr std::size_t kMaxWeights = std::size_t(1) << 30;       // 4 GiB of fp32
  static constexpr std::size_t kMaxSampleFloats = std::size_t(1) << 24;  // per layer and sample

  // `flat`: the input is taken as a vector from the start (an MLP: no flatten layer).
  NetBuilder(std::string arch, const NetSpec& spec, bool flat = false);

  void conv(int out_c, int kernel, int stride, int pad);  // needs the NCHW shape
  void pool(int kernel, int stride);                      // max pooling; needs the NCHW shape
  void relu();
  void flatten();  // once; fc flattens first where it has not been done
  void fc(std::size_t out, LinearInit init);
  void dropout(float p);  // 0 leaves the layer out

  bool flat() const { return flat_; }
  std::size_t width() const { return width_; }  // floats per sample after the last layer
  // Appends the softmax cross-entropy loss; the last layer must give `classes` floats.
  ArchLayers finish(std::size_t classes);

 private:
  void add(std::unique_ptr<Layer> layer);
  void count_weights(const std::string& layer, double weights);
  void check_output(const std::string& layer, double floats) const;
  [[noreturn]] void fail(const std::string& layer, const std::string& what) const;
  std::string shape() const;

  std::string arch_;
  int c_, h_, w_;
  std::size_t width_;
  bool flat_ = false;
  double weights_ = 0;
  int conv_ = 0, pool_ = 0, fc_ = 0, relu_ = 0, dropout_ = 0;
  ArchLayers out_;
};

}  // namespace psrt::engine
