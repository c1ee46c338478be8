// Gradient Dropping (Aji & Heafield 2017): drop the (1 - density) fraction of smallest |g| (99% by
// default); the threshold is the (1 - density) quantile of a random sample of |g| (sample_fraction
// of the chunk, at least 1024 elements or the whole chunk), fp32 values. Residuals come from the
// error-feedback decorator. The sample is seeded by (seed, iteration, offset): reproducible.
#pragma once

#include <cstdint>

#include "compress/codec.h"
#include "compress/codec_config.h"

namespace psrt::compress {

class GradDropCodec final : public Codec {
 public:
  explicit GradDropCodec(const CodecConfig& config)
      : density_(config.density), sample_fraction_(config.sample_fraction), seed_(config.seed) {}

  CodecId id() const override { return CodecId::kGradDrop; }
  std::string_view name() const override { return "graddrop"; }
  std::unique_ptr<CodecState> make_state(const TensorInfo& info) const override;
  Status encode(CodecState& state, const ChunkInput& chunk,
                std::vector<uint8_t>& payload) const override;
  Status decode_accumulate(std::span<const uint8_t> payload, std::span<float> out,
                           float weight = 1.0f) const override;
  EncodeStats stats(const CodecState& state) const override;

 private:
  double density_;
  double sample_fraction_;
  uint64_t seed_;
};

}  // namespace psrt::compress
