#include "compress/topk_codec.h"

#include <algorithm>
#include <cmath>

#include "compress/codec_util.h"
#include "compress/payload_decoder.h"
#include "compress/payload_writer.h"

namespace psrt::compress {

namespace {

class TopKState final : public BasicState {
 public:
  using BasicState::BasicState;
  std::vector<float> magnitudes_;
  std::vector<uint32_t> indices_;
};

}  // namespace

std::unique_ptr<CodecState> TopKCodec::make_state(const TensorInfo& info) const {
  return std::make_unique<TopKState>(info);
}

Status TopKCodec::encode(CodecState& state, const ChunkInput& chunk,
                         std::vector<uint8_t>& payload) const {
  Result<TopKState*> checked = checked_state<TopKState>(state, chunk, name());
  if (!checked) return checked.status();
  TopKState& s = **checked;
  const std::span<const float> g = chunk.values;
  const size_t n = g.size();
  const size_t k = std::min(n, static_cast<size_t>(std::ceil(density_ * static_cast<double>(n))));
  s.indices_.clear();
  if (k > 0) {
    s.magnitudes_.resize(n);
    for (size_t i = 0; i < n; ++i) {
      s.magnitudes_[i] = std::fabs(g[i]);
      if (!std::isfinite(g[i]))
        return Status::error("topk: gradient chunk holds a NaN or an infinity");
    }
    std::nth_element(s.magnitudes_.begin(), s.magnitudes_.begin() + static_cast<ptrdiff_t>(k - 1),
                     s.magnitudes_.end(), std::greater<float>());
    const float kth = s.magnitudes_[k - 1];
    size_t above = 0;
    for (size_t i = 0; i < n; ++i) above += std::fabs(g[i]) > kth ? 1 : 0;
    size_t ties = k - above;  // elements equal to kth to take, lowest index first
    for (size_t i = 0; i < n; ++i) {
      const float a = std::fabs(g[i]);
      if (a > kth || (a == kth && ties > 0 && (--ties, true))) {
        if (a == 0.0f) continue;  // never send zeros
        s.indices_.push_back(static_cast<uint32_t>(i));
      }
    }
  }
  write_sparse_fp32(id(), g, s.indices_, payload);
  count(s, n, s.indices_.size(), payload.size());
  return Status::ok();
}

Status TopKCodec::decode_accumulate(std::span<const uint8_t> payload, std::span<float> out,
                                    float weight) const {
  return accumulate_payload(payload, out, weight, DecodeOptions{.expect = id()});
}

EncodeStats TopKCodec::stats(const CodecState& state) const { return basic_stats(state); }

}  // namespace psrt::compress
