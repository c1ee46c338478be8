#include "compress/error_feedback.h"

#include "compress/cpu_kernels.h"

#include <string>
#include <vector>

namespace psrt::compress {

namespace {

class ResidualState final : public CodecState {
 public:
  ResidualState(std::unique_ptr<CodecState> inner, int64_t n)
      : inner_(std::move(inner)), residual_(static_cast<size_t>(n), 0.0f) {}
  std::unique_ptr<CodecState> inner_;
  std::vector<float> residual_;
};

}  // namespace

ErrorFeedback::ErrorFeedback(std::unique_ptr<Codec> inner) : inner_(std::move(inner)) {}

std::unique_ptr<CodecState> ErrorFeedback::make_state(const TensorInfo& info) const {
  return std::make_unique<ResidualState>(inner_->make_state(info), info.num_elements);
}

Status ErrorFeedback::encode(CodecState& state, const ChunkInput& chunk,
                             std::vector<uint8_t>& payload) const {
  auto* s = dynamic_cast<ResidualState*>(&state);
  if (s == nullptr) return Status::error("error feedback: state made by another codec");
  const auto n = static_cast<int64_t>(s->residual_.size());
  const auto len = static_cast<int64_t>(chunk.values.size());
  if (chunk.offset < 0 || len > n || chunk.offset > n - len) {
    return Status::error("error feedback: chunk [" + std::to_string(chunk.offset) + ", +" +
                         std::to_string(len) + ") outside tensor of " + std::to_string(n));
  }
  float* r = s->residual_.data() + chunk.offset;
  const float* g = chunk.values.data();
  // r = corrected gradient, and its moments in the same pass.
  const ChunkMoments moments = add_and_moments(std::span<float>(r, static_cast<size_t>(len)), chunk.values);

  ChunkInput corrected = chunk;
  corrected.values = std::span<const float>(r, static_cast<size_t>(len));
  corrected.moments = &moments;
  if (Status st = inner_->encode(*s->inner_, corrected, payload); !st) {
    for (int64_t i = 0; i < len; ++i) r[i] -= g[i];  // best effort: leave the residual as it was
    return st;
  }
  return inner_->subtract_sent(*s->inner_, payload, std::span<float>(r, static_cast<size_t>(len)));
}

EncodeStats ErrorFeedback::stats(const CodecState& state) const {
  const auto* s = dynamic_cast<const ResidualState*>(&state);
  return s != nullptr ? inner_->stats(*s->inner_) : EncodeStats{};
}

std::span<const float> ErrorFeedback::residual(const CodecState& state) {
  const auto* s = dynamic_cast<const ResidualState*>(&state);
  return s != nullptr ? std::span<const float>(s->residual_) : std::span<const float>();
}

}  // namespace psrt::compress
