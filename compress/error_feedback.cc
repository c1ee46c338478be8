#include "compress/error_feedback.h"

#include "compress/cpu_kernels.h"

#include <string>
#include <vector>

namespace psrt::compress {

namespace {

class ResidualState final : public CodecState {
 public:
  ResidualState(std::unique_ptr<CodecState> inner, int64_t n, bool momentum, bool adam)
      : inner_(std::move(inner)),
        residual_(static_cast<size_t>(n), 0.0f),
        momentum_(momentum || adam ? static_cast<size_t>(n) : 0, 0.0f),
        second_(adam ? static_cast<size_t>(n) : 0, 0.0f),
        with_momentum_(momentum),
        with_adam_(adam) {}
  std::unique_ptr<CodecState> inner_;
  std::vector<float> residual_;
  std::vector<float> momentum_;  // u, with momentum correction; Adam's m with Adam correction
  std::vector<float> second_;    // Adam's v, with Adam correction
  std::vector<float> sent_;      // masking's scratch: the last chunk's payload, decoded
  std::vector<float> key_;       // Adam's selection key of the chunk (select_gradient)
  bool with_momentum_;
  bool with_adam_;
  uint64_t adam_steps_ = 0;      // Adam's t: iterations this tensor has seen
  int64_t last_iteration_ = -1;  // the iteration adam_steps_ last counted
};

}  // namespace

ErrorFeedback::ErrorFeedback(std::unique_ptr<Codec> inner, float momentum, bool masking)
    : inner_(std::move(inner)), momentum_(momentum), masking_(masking && momentum > 0) {}

ErrorFeedback::ErrorFeedback(std::unique_ptr<Codec> inner, const AdamCorrection& adam)
    : inner_(std::move(inner)), momentum_(0), masking_(false), adam_(adam) {}

std::unique_ptr<CodecState> ErrorFeedback::make_state(const TensorInfo& info) const {
  return std::make_unique<ResidualState>(inner_->make_state(info), info.num_elements,
                                         momentum_ > 0, adam_.has_value());
}

Status ErrorFeedback::encode(CodecState& state, const ChunkInput& chunk,
                             std::vector<uint8_t>& payload) const {
  auto* s = dynamic_cast<ResidualState*>(&state);
  if (s == nullptr) return Status::error("error feedback: state made by another codec");
  if ((momentum_ > 0) != s->with_momentum_ || adam_.has_value() != s->with_adam_) {
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
  float* u = momentum_ > 0 || adam_ ? s->momentum_.data() + chunk.offset : nullptr;
  // r = corrected gradient (with momentum correction u = m*u + g first, and r += u; with Adam
  // correction r += Adam's direction), and its moments in the same pass.
  ChunkMoments moments;
  if (adam_) {
    if (chunk.iteration != s->last_iteration_) {
      ++s->adam_steps_;
      s->last_iteration_ = chunk.iteration;
    }
    AdamStep step = adam_step(adam_->beta1, adam_->beta2, adam_->eps, s->adam_steps_,
                               adam_->workers);
    step.cap = adam_->residual_cap;
    const std::span<float> v(s->second_.data() + chunk.offset, rs.size());
    moments = adam_add_and_moments(std::span<float>(u, rs.size()), v, step, rs, chunk.values);
    if (adam_->select_gradient) {
      // LACO selects by the residual in the gradient's units (one more pass over m, v and r).
      s->key_.resize(rs.size());
      moments = adam_gradient_key(std::span<const float>(u, rs.size()), v, step, rs, s->key_);
    }
  } else if (u != nullptr) {
    moments = momentum_add_and_moments(std::span<float>(u, rs.size()), momentum_, rs, chunk.values);
  } else {
    moments = add_and_moments(rs, chunk.values);
  }

  ChunkInput corrected = chunk;
  corrected.values = std::span<const float>(r, static_cast<size_t>(len));
  if (adam_ && adam_->select_gradient) corrected.select = s->key_;
  corrected.moments = &moments;
  if (Status st = inner_->encode(*s->inner_, corrected, payload); !st) {
    // Best effort: the residual keeps the direction (u, m and v have taken the gradient).
    if (!adam_) {
      const float* added = u != nullptr ? u : g;
      for (int64_t i = 0; i < len; ++i) r[i] -= added[i];
    }
    return st;
  }
  PSRT_RETURN_IF_ERROR(inner_->subtract_sent(*s->inner_, payload, rs));
  if (!masking_) return Status::ok();
  // Momentum factor masking: what the server will apply, decoded; a non-zero value was sent.
  s->sent_.assign(rs.size(), 0.0f);
  PSRT_RETURN_IF_ERROR(inner_->decode_accumulate(payload, s->sent_, 1.0f));
  for (int64_t i = 0; i < len; ++i) {
    if (s->sent_[static_cast<size_t>(i)] != 0.0f) u[i] = 0.0f;
  }
  return Status::ok();
}

void ErrorFeedback::save_state(const CodecState& state, ByteWriter& out) const {
  const auto& s = dynamic_cast<const ResidualState&>(state);
  out.floats(s.residual_);
  out.floats(s.momentum_);
  if (s.with_adam_) {
    out.floats(s.second_);
    out.put<uint64_t>(s.adam_steps_);
    out.put<int64_t>(s.last_iteration_);
  }
  inner_->save_state(*s.inner_, out);
}

Status ErrorFeedback::load_state(CodecState& state, ByteReader& in) const {
  auto* s = dynamic_cast<ResidualState*>(&state);
  if (s == nullptr) return Status::error("error feedback: state made by another codec");
  std::vector<float> residual, momentum;
  if (!in.floats(residual, s->residual_.size()) || residual.size() != s->residual_.size() ||
      !in.floats(momentum, s->momentum_.size()) || momentum.size() != s->momentum_.size()) {
    return Status::error("error feedback: the saved residual or momentum does not fit this "
                         "tensor (" + std::to_string(s->residual_.size()) +
                         " elements): the model, or compression.momentum_correction / "
                         "adam_correction, changed since the checkpoint?");
  }
  if (s->with_adam_) {
    std::vector<float> second;
    if (!in.floats(second, s->second_.size()) || second.size() != s->second_.size()) {
      return Status::error("error feedback: the saved Adam moments do not fit this tensor");
    }
    const auto steps = in.get<uint64_t>();
    const auto last = in.get<int64_t>();
    if (in.failed()) return Status::error("error feedback: the saved Adam state is truncated");
    s->second_ = std::move(second);
    s->adam_steps_ = steps;
    s->last_iteration_ = last;
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

std::span<const float> ErrorFeedback::second_moment(const CodecState& state) {
  const auto* s = dynamic_cast<const ResidualState*>(&state);
  return s != nullptr ? std::span<const float>(s->second_) : std::span<const float>();
}

std::span<const float> ErrorFeedback::momentum_buffer(const CodecState& state) {
  const auto* s = dynamic_cast<const ResidualState*>(&state);
  return s != nullptr ? std::span<const float>(s->momentum_) : std::span<const float>();
}

}  // namespace psrt::compress
