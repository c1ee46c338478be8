// The job configuration's `compression:` section as the codecs' own settings.
#pragma once

#include "compress/codec_config.h"
#include "core/config.h"

namespace psrt::compress {

inline CodecConfig codec_config(const CompressionConfig& c) {
  CodecConfig out;
  out.codec = c.codec;
  out.density = c.density;
  out.calibration_iters = c.calibration_iters;
  out.warmup_iters = c.warmup_iters;
  out.dense_below = c.dense_below;
  out.quant_bits = c.quant_bits;
  out.error_feedback = c.error_feedback;
  out.momentum = c.momentum;
  out.momentum_masking = c.momentum_masking;
  return out;
}

}  // namespace psrt::compress
