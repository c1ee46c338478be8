// LACO: layer-adaptive threshold (LADS) with alpha calibrated on the first dense iterations, a hot
// start, a hierarchical per-layer density, and 8-bit log quantization. See README.md.
// Use it under ErrorFeedback (make_codec does when error_feedback is set): unsent elements stay in
// the residual.
#pragma once

#include "compress/codec.h"
#include "compress/codec_config.h"
#include "compress/log_quant.h"

namespace psrt::compress {

class LacoCodec final : public Codec {
 public:
  explicit LacoCodec(const CodecConfig& config);

  CodecId id() const override { return CodecId::kLaco; }
  std::string_view name() const override { return "laco"; }
  std::unique_ptr<CodecState> make_state(const TensorInfo& info) const override;
  Status encode(CodecState& state, const ChunkInput& chunk,
                std::vector<uint8_t>& payload) const override;
  Status decode_accumulate(std::span<const uint8_t> payload, std::span<float> out,
                           float weight = 1.0f) const override;
  EncodeStats stats(const CodecState& state) const override;

  // The alpha a state currently uses at `iteration` (0 during calibration and for dense tensors).
  double alpha(const CodecState& state, int64_t iteration) const;
  const CodecConfig& config() const { return config_; }
  const LogCodebooks& codebooks() const { return books_; }

 private:
  CodecConfig config_;
  LogCodebooks books_;
};

}  // namespace psrt::compress
