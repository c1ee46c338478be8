// Momentum correction (Lin et al., Deep Gradient Compression, 2018) as a decorator over error
// feedback: the worker keeps the momentum, so that the codec compresses the velocity the optimizer
// would have applied instead of single gradients. Per chunk, with factor m:
//   u = m * u + g;  payload = inner.encode(u)   (inner: ErrorFeedback, which adds u to the
//                                                residual and keeps what was not sent)
// and, with masking only (DGC's momentum factor masking):
//   u[i] = 0 where the payload sent element i
// The server then runs plain SGD (momentum 0). Momentum is linear, so without masking every
// gradient reaches the parameters with the same total weight 1/(1-m) as under server-side momentum,
// only later where it waited in the residual; masking drops the rest of a sent element's momentum
// (DGC: stale momentum pushes in an old direction), which makes sense for sparsifying codecs only
// (with a dense one it would clear every u).
#pragma once

#include <memory>
#include <vector>

#include "compress/codec.h"

namespace psrt::compress {

class MomentumCorrection final : public Codec {
 public:
  // `momentum` in (0, 1). `inner` is the error-feedback codec (make_codec builds the pair).
  MomentumCorrection(std::unique_ptr<Codec> inner, float momentum, bool masking);

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
  float momentum() const { return momentum_; }
  bool masking() const { return masking_; }
  // The momentum buffer u of a state made by this decorator (whole tensor), and the inner
  // codec's state (ErrorFeedback::residual reads the residual from it).
  static std::span<const float> momentum_buffer(const CodecState& state);
  static const CodecState* inner_state(const CodecState& state);

 private:
  std::unique_ptr<Codec> inner_;
  float momentum_;
  bool masking_;
};

}  // namespace psrt::compress
