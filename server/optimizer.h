// Optimizers the servers run on each chunk: SGD with momentum and weight decay (PyTorch's
// convention) and Adam (with L2 weight decay). Element-wise, so a chunk updates alone.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/config.h"

namespace psrt {

struct OptimizerState {
  std::vector<float> m;  // SGD: momentum buffer; Adam: first moment
  std::vector<float> v;  // Adam: second moment
  uint64_t step = 0;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // params -= f(grad); `state` is this chunk's own and grows on first use.
  virtual void update(std::span<float> params, std::span<const float> grad,
                      OptimizerState& state) const = 0;
};

std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& config);

// The synchronous aggregate: out = (in[0] + in[1] + ... + in[W-1]) / W, summed in rank order so the
// result does not depend on arrival order.
void aggregate_mean(std::span<float> out, const std::vector<const float*>& inputs);

}  // namespace psrt
