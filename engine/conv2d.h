// 2-D convolution over NCHW samples by im2col plus one cblas_sgemm per sample.
// Tensors: "<name>.weight" of shape [out_c, in_c, k, k], "<name>.bias" of shape [out_c].
// Weights are Kaiming/He normal with fan_in = in_c * k * k (every conv here feeds a ReLU); biases
// 0. A training forward keeps the batch's im2col columns for the backward that follows (same `in`
// pointer and n) when they take at most kColCacheBytes; otherwise backward recomputes them.
// Evaluation (training == false) neither uses nor disturbs that cache.
#pragma once

#include <vector>

#include "engine/conv_geom.h"
#include "engine/layer.h"
#include "engine/weights.h"

namespace psrt::engine {

class Conv2d final : public Layer {
 public:
  static constexpr std::size_t kColCacheBytes = std::size_t{16} << 20;

  // Throws psrt::ConfigError when !geom.valid().
  Conv2d(std::string name, const ConvGeom& geom);

  std::string_view kind() const override { return "conv2d"; }
  std::size_t in_size() const override { return g_.in_size(); }
  std::size_t out_size() const override { return g_.out_size(); }
  double forward_flops() const override;
  const ConvGeom& geom() const { return g_; }
  std::vector<ParamSlot> params() override;
  std::vector<ParamShape> param_shapes() const override { return p_.shapes(); }
  void init_params(uint64_t seed) override;
  void forward(const float* in, float* out, int n, bool training) override;
  void backward(const float* in, const float* out, const float* dout, float* din, int n) override;

 private:
  void workspace();  // col_ and ones_, at the first forward or backward

  ConvGeom g_;
  Weights p_;
  std::vector<float> col_, dcol_;  // workspace: col_rows x col_cols
  std::vector<float> ones_;        // col_cols ones, for the bias gradient
  std::vector<float> cols_;        // the last training forward's columns, n x col_rows x col_cols
  const float* cached_in_ = nullptr;
  int cached_n_ = 0;
};

}  // namespace psrt::engine
