#include "engine/flatten.h"

#include <algorithm>

namespace psrt::engine {

void Flatten::forward(const float* in, float* out, int n, bool /*training*/) {
  std::copy(in, in + static_cast<std::size_t>(std::max(n, 0)) * size_, out);
}

void Flatten::backward(const float* /*in*/, const float* /*out*/, const float* dout, float* din,
                       int n) {
  if (din == nullptr) return;
  std::copy(dout, dout + static_cast<std::size_t>(std::max(n, 0)) * size_, din);
}

}  // namespace psrt::engine
