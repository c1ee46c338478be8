// Error feedback as a decorator: any codec gets a residual. For each chunk
//   corrected = gradient + residual;  payload = inner.encode(corrected);
//   residual  = corrected - decode(payload)
// so that what was sent plus the residual equals the corrected gradient. The residual is updated
// by decoding the payload with weight -1 into it, so "sent" is exactly what the server decodes.
#pragma once

#include <memory>

#include "compress/codec.h"

namespace psrt::compress {

class ErrorFeedback final : public Codec {
 public:
  explicit ErrorFeedback(std::unique_ptr<Codec> inner);

  CodecId id() const override { return inner_->id(); }
  std::string_view name() const override { return inner_->name(); }
  std::unique_ptr<CodecState> make_state(const TensorInfo& info) const override;
  Status encode(CodecState& state, const ChunkInput& chunk,
                std::vector<uint8_t>& payload) const override;
  Status decode_accumulate(std::span<const uint8_t> payload, std::span<float> out,
                           float weight) const override {
    return inner_->decode_accumulate(payload, out, weight);
  }
  Status accumulate_sent(std::span<const uint8_t> payload, std::span<float> out,
                         float weight) const override {
    return inner_->accumulate_sent(payload, out, weight);
  }
  void finish_aggregate(std::span<float> sum, int num_payloads) const override {
    inner_->finish_aggregate(sum, num_payloads);
  }
  EncodeStats stats(const CodecState& state) const override;

  const Codec& inner() const { return *inner_; }
  // The residual of a state made by this decorator (whole tensor).
  static std::span<const float> residual(const CodecState& state);

 private:
  std::unique_ptr<Codec> inner_;
};

}  // namespace psrt::compress
