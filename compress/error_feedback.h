// Error feedback as a decorator: any codec gets a residual. For each chunk
//   corrected = gradient + residual;  payload = inner.encode(corrected);
//   residual  = corrected - decode(payload)
// so that what was sent plus the residual equals the corrected gradient. The residual is updated
// by decoding the payload with weight -1 into it, so "sent" is exactly what the server decodes.
//
// With momentum correction (Lin et al., Deep Gradient Compression, 2018; momentum m > 0) the
// worker keeps the optimizer's momentum u per tensor and the residual takes u instead of the
// gradient, in the same pass:
//   u = m * u + gradient;  corrected = u + residual;  ...as above
// and, with masking only (DGC's momentum factor masking), u[i] = 0 where the payload sent element
// i. The servers then run plain SGD. Momentum is linear, so without masking every gradient reaches
// the parameters with the same total weight 1/(1-m) as under the servers' momentum, only later
// where it waited in the residual; masking drops the rest of a sent element's momentum (DGC: stale
// momentum pushes in an old direction). Masking is for sparsifying codecs only (with a dense one it
// would clear every u); make_codec checks.
#pragma once

#include <memory>

#include "compress/codec.h"

namespace psrt::compress {

class ErrorFeedback final : public Codec {
 public:
  // `momentum` in [0, 1): 0 is plain error feedback.
  explicit ErrorFeedback(std::unique_ptr<Codec> inner, float momentum = 0,
                         bool masking = false);

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
  void save_state(const CodecState& state, ByteWriter& out) const override;
  Status load_state(CodecState& state, ByteReader& in) const override;

  const Codec& inner() const { return *inner_; }
  float momentum() const { return momentum_; }
  bool masking() const { return masking_; }
  // The residual of a state made by this decorator (whole tensor).
  static std::span<const float> residual(const CodecState& state);
  // Its momentum u (whole tensor; empty without momentum correction).
  static std::span<const float> momentum_buffer(const CodecState& state);

 private:
  std::unique_ptr<Codec> inner_;
  float momentum_;
  bool masking_;
};

}  // namespace psrt::compress
