// LACO's density over time (hot start) and across layers (hierarchical rule).
//
// Hot start: iterations [0, C) are calibration (dense, density 1). Warm-up iterations [C, C + W)
// are split into S = min(5, W) equal stages; stage s (0-based) uses target^((s + 1) / S), so the
// density falls from 1 in exponential steps (target 0.001: 25%, 6.3%, 1.6%, 0.4%, 0.1%, as DGC's
// warm-up). From C + W on, the target.
//
// Hierarchical rule, per tensor of n elements at depth l of L layers:
//   size  = clamp(sqrt(kSizeRef / n), 1, kMaxSizeBoost)   small tensors denser (cheap in bytes)
//   depth = 1 + kDepthBoost * (1 - l / (L - 1))           input side denser (its error crosses
//                                                          the whole network), up to 2x
//   d_l   = min(1, d * size * depth)
// and tensors under dense_below elements are sent dense (fp32) whatever the iteration.
#pragma once

#include <cstdint>

#include "compress/codec.h"
#include "compress/codec_config.h"

namespace psrt::compress {

inline constexpr double kSizeRef = 65536.0;
inline constexpr double kMaxSizeBoost = 4.0;
inline constexpr double kDepthBoost = 1.0;
inline constexpr int kWarmupStages = 5;

// Density of the hot-start schedule at an iteration (1 during calibration).
double scheduled_density(const CodecConfig& config, int64_t iteration);

// Warm-up stage of an iteration: -1 before warm-up (calibration), S after it.
int warmup_stage(const CodecConfig& config, int64_t iteration);

// The hierarchical factor size * depth (>= 1) for a tensor.
double hierarchy_factor(const TensorInfo& info);

// Density for a tensor at an iteration: the schedule, times the hierarchical factor if enabled.
double layer_density(const CodecConfig& config, const TensorInfo& info, int64_t iteration);

}  // namespace psrt::compress
