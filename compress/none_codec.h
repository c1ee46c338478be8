// The identity codec: the chunk as dense fp32.
#pragma once

#include "compress/codec.h"

namespace psrt::compress {

class NoneCodec final : public Codec {
 public:
  CodecId id() const override { return CodecId::kNone; }
  std::string_view name() const override { return "none"; }
  std::unique_ptr<CodecState> make_state(const TensorInfo& info) const override;
  Status encode(CodecState& state, const ChunkInput& chunk,
                std::vector<uint8_t>& payload) const override;
  Status decode_accumulate(std::span<const uint8_t> payload, std::span<float> out,
                           float weight = 1.0f) const override;
  EncodeStats stats(const CodecState& state) const override;
};

}  // namespace psrt::compress
