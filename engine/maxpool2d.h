// Max pooling over NCHW samples: square window `kernel`, step `stride`, no padding, floor mode
// (trailing rows/columns that do not fill a window are dropped, as in PyTorch). No tensors.
// backward routes each output gradient to the first input in its window (row-major) that equals
// the window's maximum: the argmax is recomputed from `in` and `out`, so the layer keeps no mask.
#pragma once

#include "engine/layer.h"
#include "engine/pool_geom.h"

namespace psrt::engine {

class MaxPool2d final : public Layer {
 public:
  // Throws psrt::ConfigError when !geom.valid().
  MaxPool2d(std::string name, const PoolGeom& geom);

  std::string_view kind() const override { return "maxpool2d"; }
  std::size_t in_size() const override;
  std::size_t out_size() const override;
  // One comparison per window element.
  double forward_flops() const override;
  const PoolGeom& geom() const { return g_; }
  void forward(const float* in, float* out, int n, bool training) override;
  void backward(const float* in, const float* out, const float* dout, float* din, int n) override;

 private:
  PoolGeom g_;
};

}  // namespace psrt::engine
