// The codec settings of compressed parameter replies, derived from the job's `compression:`
// section (one type: compress/codec_config.h).
#pragma once

#include "compress/codec_config.h"

namespace psrt::compress {

// The codec settings of compressed parameter replies: the job's codec, without error feedback
// (the server's `published` copy keeps what was not sent) and without momentum or Adam correction
// (those are the workers' pushes'). The server encodes with them, the workers decode.
inline CodecConfig reply_codec_config(const CodecConfig& c) {
  CodecConfig out = c;
  out.error_feedback = false;
  out.momentum = 0;
  out.momentum_masking = false;
  out.adam = false;
  out.adam_select_gradient = false;
  if (c.reply_density > 0) out.density = c.reply_density;
  if (c.reply_quant_bits > 0) out.quant_bits = c.reply_quant_bits;
  return out;
}

}  // namespace psrt::compress
