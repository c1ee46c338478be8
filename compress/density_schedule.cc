#include "compress/density_schedule.h"

#include <algorithm>
#include <cmath>

namespace psrt::compress {

namespace {
int stages(const CodecConfig& c) { return std::min(kWarmupStages, c.warmup_iters); }
}  // namespace

int warmup_stage(const CodecConfig& c, int64_t iteration) {
  const int64_t t = iteration - c.calibration_iters;
  if (t < 0) return -1;
  if (t >= c.warmup_iters) return stages(c);
  return static_cast<int>(t * stages(c) / c.warmup_iters);
}

double scheduled_density(const CodecConfig& c, int64_t iteration) {
  const int s = warmup_stage(c, iteration);
  if (s < 0) return 1.0;
  const int total = stages(c);
  if (s >= total) return c.density;
  return std::pow(c.density, static_cast<double>(s + 1) / total);
}

double hierarchy_factor(const TensorInfo& info) {
  const double n = std::max<double>(1.0, static_cast<double>(info.num_elements));
  const double size = std::clamp(std::sqrt(kSizeRef / n), 1.0, kMaxSizeBoost);
  const double depth_frac =
      info.num_layers > 1
          ? std::clamp(static_cast<double>(info.layer) / (info.num_layers - 1), 0.0, 1.0)
          : 1.0;
  return size * (1.0 + kDepthBoost * (1.0 - depth_frac));
}

double layer_density(const CodecConfig& c, const TensorInfo& info, int64_t iteration) {
  const double d = scheduled_density(c, iteration);
  if (!c.hierarchical || d >= 1.0) return d;
  return std::min(1.0, d * hierarchy_factor(info));
}

}  // namespace psrt::compress
