// Compresses each chunk of a gradient before the scheduler sends it, with per-tensor codec state
// (residuals for error feedback, LACO's calibration). Codec `none` sends the fp32 values as they
// are, without a copy.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "compress/codec.h"
#include "core/config.h"
#include "core/model.h"
#include "core/sharding.h"
#include "psrt.pb.h"

namespace psrt {

class GradEncoder {
 public:
  // Throws ConfigError on bad compression settings.
  GradEncoder(const CompressionConfig& config, const ModelDesc& model);

  bool compresses() const { return codec_ != nullptr; }
  wire::Codec wire_codec() const { return wire_codec_; }
  // Encodes chunk `c` of its tensor's gradient `grad` (the whole tensor) for `iteration`.
  std::shared_ptr<const std::vector<uint8_t>> encode(const ChunkDesc& c, uint64_t iteration,
                                                     std::span<const float> grad);

 private:
  std::unique_ptr<compress::Codec> codec_;
  wire::Codec wire_codec_ = wire::CODEC_NONE;
  std::vector<std::unique_ptr<compress::CodecState>> states_;  // by tensor key
};

}  // namespace psrt
