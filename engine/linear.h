// Fully connected layer: y = x W^T + b, W of shape [out, in] row-major, b of shape [out].
// Tensors: "<name>.weight", "<name>.bias". Products go through cblas_sgemm.
#pragma once

#include <vector>

#include "engine/layer.h"
#include "engine/weights.h"

namespace psrt::engine {

enum class LinearInit {
  kHeNormal,       // for a layer whose output feeds a ReLU
  kXavierUniform,  // for the last layer (the logits)
};

class Linear final : public Layer {
 public:
  Linear(std::string name, std::size_t in, std::size_t out, LinearInit init);

  std::string_view kind() const override { return "linear"; }
  std::size_t in_size() const override { return in_; }
  std::size_t out_size() const override { return out_; }
  double forward_flops() const override;
  std::vector<ParamSlot> params() override;
  std::vector<ParamShape> param_shapes() const override { return p_.shapes(); }
  void init_params(uint64_t seed) override;
  void forward(const float* in, float* out, int n, bool training) override;
  void backward(const float* in, const float* out, const float* dout, float* din, int n) override;

 private:
  std::size_t in_, out_;
  LinearInit init_;
  Weights p_;
};

}  // namespace psrt::engine
