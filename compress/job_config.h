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
  out.hierarchical = c.hierarchical;
  out.momentum = c.momentum;
  out.momentum_masking = c.momentum_masking;
  out.adam = c.adam;
  out.adam_beta1 = c.adam_beta1;
  out.adam_beta2 = c.adam_beta2;
  out.adam_eps = c.adam_eps;
  out.adam_workers = c.adam_global_variance ? c.adam_workers : 1;
  return out;
}

// The codec settings of compressed parameter replies: the job's codec, without error feedback
// (the server's `published` copy keeps what was not sent) and without momentum or Adam correction
// (those are the workers' pushes'). The server encodes with them, the workers decode.
inline CodecConfig reply_codec_config(const CompressionConfig& c) {
  CodecConfig out = codec_config(c);
  out.error_feedback = false;
  out.momentum = 0;
  out.momentum_masking = false;
  out.adam = false;
  return out;
}

}  // namespace psrt::compress
