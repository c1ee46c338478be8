#include "worker/layer_timing.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <vector>

namespace psrt {

bool grouping_needs_layer_times(const GroupingSpec& spec, const ModelDesc& model) {
  using K = GroupingSpec::Kind;
  if (spec.kind != K::kAuto && spec.kind != K::kMgwfbp && spec.kind != K::kHorovod) return false;
  for (const auto& l : model.layers) {
    if (l.forward_ms > 0 || l.backward_ms > 0) return false;
  }
  return !model.layers.empty();
}

void measure_layer_times(Backend& backend, ModelDesc& model, int passes) {
  using Clock = std::chrono::steady_clock;
  const auto ms = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  };
  const std::size_t n = model.layers.size();
  constexpr double kNone = std::numeric_limits<double>::infinity();
  std::vector<double> fwd(n, kNone), bwd(n, kNone);
  for (int pass = 0; pass < std::max(2, passes); ++pass) {
    backend.begin_iteration(0);
    for (std::size_t l = 0; l < n; ++l) {
      const auto t0 = Clock::now();
      backend.forward_layer(l);
      if (pass > 0) fwd[l] = std::min(fwd[l], ms(t0, Clock::now()));
    }
    for (std::size_t l = n; l-- > 0;) {
      const auto t0 = Clock::now();
      backend.backward_layer(l);
      if (pass > 0) bwd[l] = std::min(bwd[l], ms(t0, Clock::now()));
    }
  }
  backend.resume_at(0);  // the dropout masks of these passes are not training's
  for (std::size_t l = 0; l < n; ++l) {
    model.layers[l].forward_ms = fwd[l];
    model.layers[l].backward_ms = bwd[l];
  }
}

}  // namespace psrt
