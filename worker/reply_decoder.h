// Applies a server's PARAMS payload to the worker's copy of a chunk: dense values are copied;
// with compression.replies: compressed, an encoded change is decoded and added (the payload is
// validated first: a bad one is an error and leaves the values untouched).
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "compress/codec.h"
#include "core/config.h"
#include "core/status.h"
#include "proto/psrt_fwd.h"

namespace psrt {

class ReplyDecoder {
 public:
  // Throws ConfigError on bad compression settings.
  explicit ReplyDecoder(const CompressionConfig& config);

  // `dst` is the chunk's values (length elements); `payload` the frame; `codec` the header's.
  // Dense payloads have been size-checked by decode_header.
  Status apply(wire::Codec codec, std::span<const uint8_t> payload, std::span<float> dst) const;

 private:
  std::unique_ptr<compress::Codec> codec_;  // null unless replies are compressed
  wire::Codec wire_codec_;  // CODEC_NONE unless replies are compressed
};

}  // namespace psrt
