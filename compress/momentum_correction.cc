#include "compress/momentum_correction.h"

#include <string>

namespace psrt::compress {

namespace {

class MomentumState final : public CodecState {
 public:
  MomentumState(std::unique_ptr<CodecState> inner, int64_t n)
      : inner_(std::move(inner)), u_(static_cast<size_t>(n), 0.0f) {}
  std::unique_ptr<CodecState> inner_;
  std::vector<float> u_;
  std::vector<float> sent_;  // scratch: the decoded payload of the last chunk, for the mask
};

}  // namespace

MomentumCorrection::MomentumCorrection(std::unique_ptr<Codec> inner, float momentum,
                                       bool masking)
    : inner_(std::move(inner)), momentum_(momentum), masking_(masking) {}

std::unique_ptr<CodecState> MomentumCorrection::make_state(const TensorInfo& info) const {
  return std::make_unique<MomentumState>(inner_->make_state(info), info.num_elements);
}

Status MomentumCorrection::encode(CodecState& state, const ChunkInput& chunk,
                                  std::vector<uint8_t>& payload) const {
  auto* s = dynamic_cast<MomentumState*>(&state);
  if (s == nullptr) return Status::error("momentum correction: state made by another codec");
  const auto n = static_cast<int64_t>(s->u_.size());
  const auto len = static_cast<int64_t>(chunk.values.size());
  if (chunk.offset < 0 || len > n || chunk.offset > n - len) {
    return Status::error("momentum correction: chunk [" + std::to_string(chunk.offset) + ", +" +
                         std::to_string(len) + ") outside tensor of " + std::to_string(n));
  }
  const std::span<float> u(s->u_.data() + chunk.offset, static_cast<size_t>(len));
  const float m = momentum_;
  const float* g = chunk.values.data();
  for (int64_t i = 0; i < len; ++i) u[i] = m * u[i] + g[i];

  ChunkInput velocity = chunk;
  velocity.values = u;
  velocity.moments = nullptr;  // the caller's moments were of g
  if (Status st = inner_->encode(*s->inner_, velocity, payload); !st) return st;
  if (!masking_) return Status::ok();

  // Factor masking: what the server will apply, decoded; a non-zero value was sent.
  s->sent_.assign(static_cast<size_t>(len), 0.0f);
  if (Status st = inner_->decode_accumulate(payload, s->sent_, 1.0f); !st) return st;
  for (int64_t i = 0; i < len; ++i) {
    if (s->sent_[size_t(i)] != 0.0f) u[i] = 0.0f;
  }
  return Status::ok();
}

EncodeStats MomentumCorrection::stats(const CodecState& state) const {
  const auto* s = dynamic_cast<const MomentumState*>(&state);
  return s != nullptr ? inner_->stats(*s->inner_) : EncodeStats{};
}

std::span<const float> MomentumCorrection::momentum_buffer(const CodecState& state) {
  const auto* s = dynamic_cast<const MomentumState*>(&state);
  return s != nullptr ? std::span<const float>(s->u_) : std::span<const float>();
}

const CodecState* MomentumCorrection::inner_state(const CodecState& state) {
  const auto* s = dynamic_cast<const MomentumState*>(&state);
  return s != nullptr ? s->inner_.get() : nullptr;
}

}  // namespace psrt::compress
