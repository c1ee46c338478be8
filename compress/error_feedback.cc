#include "compress/error_feedback.h"

#include "compress/cpu_kernels.h"

#include <string>
#include <vector>

namespace psrt::compress {

namespace {

class ResidualState final : public CodecState {
 public:
  ResidualState(std::unique_ptr<CodecState> inner, int64_t n, bool momentum)
      : inner_(std::move(inner)),
        residual_(static_cast<size_t>(n), 0.0f),
        momentum_(momentum ? static_cast<size_t>(n) : 0, 0.0f),
        with_momentum_(momentum) {}
  std::unique_ptr<CodecState> inner_;
  std::vector<float> residual_;
  std::vector<float> momentum_;  // u, with momentum correction
  std::vector<float> sent_;      // masking's scratch: the last chunk's payload, decoded
  bool with_momentum_;
};

}  // namespace

ErrorFeedback::ErrorFeedback(std::unique_ptr<Codec> inner, float momentum, bool masking)
    : inner_(std::move(inner)), momentum_(momentum), masking_(masking && momentum > 0) {}

std::unique_ptr<CodecState> ErrorFeedback::make_state(const TensorInfo& info) const {
  return std::make_unique<ResidualState>(inner_->make_state(info), info.num_elements,
                                         momentum_ > 0);
}

Status ErrorFeedback::encode(CodecState& state, const ChunkInput& chunk,
                             std::vector<uint8_t>& payload) const {
  auto* s = dynamic_cast<ResidualState*>(&state);
  if (s == nullptr) return Status::error("error feedback: state made by another codec");
  if ((momentum_ > 0) != s->with_momentum_) {
    return Status::error("error feedback: state made with other momentum correction settings");
  }
  const auto n = static_cast<int64_t>(s->residual_.size());
  const auto len = static_cast<int64_t>(chunk.values.size());
  if (chunk.offset < 0 || len > n || chunk.offset > n - len) {
    return Status::error("error feedback: chunk [" + std::to_string(chunk.offset) + ", +" +
                         std::to_string(len) + ") outside tensor of " + std::to_string(n));
  }
  float* r = s->residual_.data() + chunk.offset;
  const float* g = chunk.values.data();
  const std::span<float> rs(r, static_cast<size_t>(len));
  float* u = momentum_ > 0 ? s->momentum_.data() + chunk.offset : nullptr;
  // r = corrected gradient (with momentum correction u = m*u + g first, and r += u), and its
  // moments in the same pass.
  const ChunkMoments moments =
      u == nullptr ? add_and_moments(rs, chunk.values)
                   : momentum_add_and_moments(std::span<float>(u, rs.size()), momentum_, rs,
                                              chunk.values);

  ChunkInput corrected = chunk;
  corrected.values = std::span<const float>(r, static_cast<size_t>(len));
  corrected.moments = &moments;
  if (Status st = inner_->encode(*s->inner_, corrected, payload); !st) {
    // Best effort: leave the residual as it was (u has taken the gradient: not undone).
    const float* added = u != nullptr ? u : g;
    for (int64_t i = 0; i < len; ++i) r[i] -= added[i];
    return st;
  }
  if (Status st = inner_->subtract_sent(*s->inner_, payload, rs); !st) return st;
  if (!masking_) return Status::ok();
  // Momentum factor masking: what the server will apply, decoded; a non-zero value was sent.
  s->sent_.assign(rs.size(), 0.0f);
  if (Status st = inner_->decode_accumulate(payload, s->sent_, 1.0f); !st) return st;
  for (int64_t i = 0; i < len; ++i) {
    if (s->sent_[static_cast<size_t>(i)] != 0.0f) u[i] = 0.0f;
  }
  return Status::ok();
}

void ErrorFeedback::save_state(const CodecState& state, ByteWriter& out) const {
  const auto& s = dynamic_cast<const ResidualState&>(state);
  out.floats(s.residual_);
  out.floats(s.momentum_);
  inner_->save_state(*s.inner_, out);
}

Status ErrorFeedback::load_state(CodecState& state, ByteReader& in) const {
  auto* s = dynamic_cast<ResidualState*>(&state);
  if (s == nullptr) return Status::error("error feedback: state made by another codec");
  std::vector<float> residual, momentum;
  if (!in.floats(residual, s->residual_.size()) || residual.size() != s->residual_.size() ||
      !in.floats(momentum, s->momentum_.size()) || momentum.size() != s->momentum_.size()) {
    return Status::error("error feedback: the saved residual does not fit this tensor (" +
                         std::to_string(s->residual_.size()) + " elements)");
  }
  s->residual_ = std::move(residual);
  s->momentum_ = std::move(momentum);
  return inner_->load_state(*s->inner_, in);
}

EncodeStats ErrorFeedback::stats(const CodecState& state) const {
  const auto* s = dynamic_cast<const ResidualState*>(&state);
  return s != nullptr ? inner_->stats(*s->inner_) : EncodeStats{};
}

std::span<const float> ErrorFeedback::residual(const CodecState& state) {
  const auto* s = dynamic_cast<const ResidualState*>(&state);
  return s != nullptr ? std::span<const float>(s->residual_) : std::span<const float>();
}

std::span<const float> ErrorFeedback::momentum_buffer(const CodecState& state) {
  const auto* s = dynamic_cast<const ResidualState*>(&state);
  return s != nullptr ? std::span<const float>(s->momentum_) : std::span<const float>();
}

}  // namespace psrt::compress
