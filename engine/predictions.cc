#include "engine/predictions.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace psrt::engine {

int64_t count_correct(const float* logits, const int32_t* labels, std::size_t rows, std::size_t k) {
  int64_t correct = 0;
  std::size_t broken = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    const float* z = logits + r * k;
    if (!std::all_of(z, z + k, [](float v) { return std::isfinite(v); })) {
      ++broken;
      continue;
    }
    if (std::max_element(z, z + k) - z == labels[r]) ++correct;
  }
  if (broken > 0) {
    throw std::domain_error("the model's outputs are NaN or infinite for " +
                            std::to_string(broken) + " of " + std::to_string(rows) +
                            " samples evaluated: training diverged (lower optimizer.lr?)");
  }
  return correct;
}

}  // namespace psrt::engine
