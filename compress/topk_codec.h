// Exact top-k: the k = ceil(density * length) largest |g| of each chunk, fp32 values. Ties at the
// k-th magnitude go to the lowest indices, so the output is deterministic.
#pragma once

#include "compress/codec.h"
#include "compress/codec_config.h"

namespace psrt::compress {

class TopKCodec final : public Codec {
 public:
  explicit TopKCodec(const CodecConfig& config) : density_(config.density) {}

  CodecId id() const override { return CodecId::kTopK; }
  std::string_view name() const override { return "topk"; }
  std::unique_ptr<CodecState> make_state(const TensorInfo& info) const override;
  Status encode(CodecState& state, const ChunkInput& chunk,
                std::vector<uint8_t>& payload) const override;
  Status decode_accumulate(std::span<const uint8_t> payload, std::span<float> out,
                           float weight = 1.0f) const override;
  EncodeStats stats(const CodecState& state) const override;

 private:
  double density_;
};

}  // namespace psrt::compress
