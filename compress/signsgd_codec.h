// signSGD (Bernstein et al. 2018): one bit per element, packed (1 = negative), scale = mean |g| of
// the chunk, decoded as +-scale. With error feedback it is EF-signSGD (Karimireddy et al. 2019).
// Majority vote (optional): the server accumulates +-1 votes and finish_aggregate() turns the sum
// into its sign (0 on a tie); the learning rate then sets the step.
#pragma once

#include "compress/codec.h"
#include "compress/codec_config.h"

namespace psrt::compress {

class SignSgdCodec final : public Codec {
 public:
  explicit SignSgdCodec(const CodecConfig& config) : majority_vote_(config.majority_vote) {}

  CodecId id() const override { return CodecId::kSignSgd; }
  std::string_view name() const override { return "signsgd"; }
  std::unique_ptr<CodecState> make_state(const TensorInfo& info) const override;
  Status encode(CodecState& state, const ChunkInput& chunk,
                std::vector<uint8_t>& payload) const override;
  Status decode_accumulate(std::span<const uint8_t> payload, std::span<float> out,
                           float weight = 1.0f) const override;
  Status accumulate_sent(std::span<const uint8_t> payload, std::span<float> out,
                         float weight) const override;
  void finish_aggregate(std::span<float> sum, int num_payloads) const override;
  EncodeStats stats(const CodecState& state) const override;

 private:
  bool majority_vote_;
};

}  // namespace psrt::compress
