// Decoding payloads: parse, validate every field and the contents, then accumulate. Nothing is
// written to `out` unless the whole payload is valid.
#pragma once

#include <cstdint>
#include <span>

#include "compress/codec.h"
#include "compress/log_quant.h"
#include "core/status.h"

namespace psrt::compress {

struct DecodeOptions {
  CodecId expect = CodecId::kNone;        // the codec id the header must carry
  const LogCodebooks* codebooks = nullptr;  // needed for log8 values; else they are rejected
  bool signs_as_votes = false;           // sign values add +-1 instead of +-scale
};

// out[i] += weight * decoded[i].
Status accumulate_payload(std::span<const uint8_t> payload, std::span<float> out, float weight,
                          const DecodeOptions& options);

}  // namespace psrt::compress
