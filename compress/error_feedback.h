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
//
// With Adam correction (the worker-side correction generalised from momentum to Adam's moments)
// the worker keeps Adam's first and second moments m, v of its own gradient per tensor and the
// residual takes Adam's update direction, in one pass per chunk:
//   m = b1*m + (1-b1)*g;  v = b2*v + (1-b2)*g*g;  d = m/(1-b1^t) / (sqrt(v/(1-b2^t)) + eps)
//   corrected = d + residual;  ...as above
// and the servers run plain SGD (p -= lr * mean of the sent directions). What is compressed is the
// bounded, smooth direction, not the raw gradient, and the second moment is taken from the dense
// local gradient: the servers' Adam would see each element arrive as a burst of its accumulated
// residual every ~1/density iterations, inflating v (so shrinking its steps) by about that factor.
// t counts the iterations this tensor has seen (kept in the state, so a resumed state goes on).
#pragma once

#include <limits>
#include <memory>
#include <optional>

#include "compress/codec.h"

namespace psrt::compress {

struct AdamCorrection {
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  // > 1: the second moment rescaled to the W workers' global batch (cpu_kernels.h)
  int workers = 1;
  bool select_gradient = false;  // the inner codec selects by residual x Adam's denominator
  // |residual| <= this many steps of Adam's direction (infinity: no cap).
  float residual_cap = std::numeric_limits<float>::infinity();
};

class ErrorFeedback final : public Codec {
 public:
  // `momentum` in [0, 1): 0 is plain error feedback.
  explicit ErrorFeedback(std::unique_ptr<Codec> inner, float momentum = 0,
                         bool masking = false);
  // Adam correction (validated by the caller: betas in [0, 1), eps > 0).
  ErrorFeedback(std::unique_ptr<Codec> inner, const AdamCorrection& adam);

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
  bool adam() const { return adam_.has_value(); }
  // The residual of a state made by this decorator (whole tensor).
  static std::span<const float> residual(const CodecState& state);
  // Its momentum u (whole tensor; empty without momentum correction); with Adam correction,
  // Adam's first moment m.
  static std::span<const float> momentum_buffer(const CodecState& state);
  // Adam correction's second moment v (whole tensor; empty without it).
  static std::span<const float> second_moment(const CodecState& state);

 private:
  std::unique_ptr<Codec> inner_;
  float momentum_;
  bool masking_;
  std::optional<AdamCorrection> adam_;
};

}  // namespace psrt::compress
