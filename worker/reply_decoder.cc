#include "worker/reply_decoder.h"

#include <cstring>
#include <string>

#include "compress/job_config.h"
#include "compress/registry.h"
#include "psrt.pb.h"

namespace psrt {

ReplyDecoder::ReplyDecoder(const CompressionConfig& config) : wire_codec_(wire::CODEC_NONE) {
  if (!config.compress_replies) return;
  auto made = compress::make_codec(compress::reply_codec_config(config));
  if (!made) throw ConfigError(made.status().message());
  codec_ = std::move(made.value());
  wire_codec_ = static_cast<wire::Codec>(codec_->id());
}

Status ReplyDecoder::apply(wire::Codec codec, std::span<const uint8_t> payload,
                           std::span<float> dst) const {
  if (codec == wire::CODEC_NONE) {
    if (payload.size() != dst.size_bytes()) {
      return Status::error("dense values of " + std::to_string(payload.size()) +
                           " bytes for a chunk of " + std::to_string(dst.size()) + " elements");
    }
    std::memcpy(dst.data(), payload.data(), payload.size());
    return Status::ok();
  }
  if (!codec_ || codec != wire_codec_) {
    return Status::error("values encoded with codec " + std::to_string(int(codec)) +
                         ", but this job's replies are " +
                         (codec_ ? "encoded with codec " + std::to_string(int(wire_codec_))
                                 : std::string("dense")));
  }
  return codec_->decode_accumulate(payload, dst, 1.0f);
}

}  // namespace psrt
