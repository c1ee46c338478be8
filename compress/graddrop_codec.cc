#include "compress/graddrop_codec.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "compress/codec_util.h"
#include "compress/cpu_kernels.h"
#include "compress/payload_decoder.h"
#include "compress/payload_writer.h"

namespace psrt::compress {

namespace {

constexpr size_t kMinSample = 1024;

class GradDropState final : public BasicState {
 public:
  using BasicState::BasicState;
  std::vector<float> sample_;
  std::vector<uint32_t> indices_;
};

// splitmix64: a small, well-mixed generator.
uint64_t next(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

std::unique_ptr<CodecState> GradDropCodec::make_state(const TensorInfo& info) const {
  return std::make_unique<GradDropState>(info);
}

Status GradDropCodec::encode(CodecState& state, const ChunkInput& chunk,
                             std::vector<uint8_t>& payload) const {
  Result<GradDropState*> checked = checked_state<GradDropState>(state, chunk, name());
  if (!checked) return checked.status();
  GradDropState& s = **checked;
  const std::span<const float> g = chunk.values;
  const size_t n = g.size();
  if (!std::isfinite(sum_abs(g))) {
    return Status::error("graddrop: gradient chunk holds a NaN or an infinity");
  }
  s.indices_.clear();
  if (n > 0) {
    const size_t m = std::min(
        n, std::max(kMinSample,
                    static_cast<size_t>(std::ceil(sample_fraction_ * static_cast<double>(n)))));
    s.sample_.resize(m);
    if (m == n) {
      for (size_t i = 0; i < n; ++i) s.sample_[i] = std::fabs(g[i]);
    } else {
      uint64_t x = seed_ ^ (static_cast<uint64_t>(chunk.iteration) * 0x100000001b3ull) ^
                   (static_cast<uint64_t>(chunk.offset) << 20);
      for (size_t j = 0; j < m; ++j) s.sample_[j] = std::fabs(g[next(x) % n]);
    }
    // The (1 - density) quantile: the sample's ceil(density * m)-th largest.
    const size_t rank =
        std::max<size_t>(1, static_cast<size_t>(std::ceil(density_ * static_cast<double>(m))));
    std::nth_element(s.sample_.begin(), s.sample_.begin() + static_cast<ptrdiff_t>(rank - 1),
                     s.sample_.end(), std::greater<float>());
    const float threshold =
        std::max(s.sample_[rank - 1], std::numeric_limits<float>::denorm_min());
    select_at_least(g, threshold, s.indices_);
  }
  write_sparse_fp32(id(), g, s.indices_, payload);
  count(s, n, s.indices_.size(), payload.size());
  return Status::ok();
}

Status GradDropCodec::decode_accumulate(std::span<const uint8_t> payload, std::span<float> out,
                                        float weight) const {
  return accumulate_payload(payload, out, weight, DecodeOptions{.expect = id()});
}

EncodeStats GradDropCodec::stats(const CodecState& state) const { return basic_stats(state); }

}  // namespace psrt::compress
