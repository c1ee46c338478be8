#include "compress/signsgd_codec.h"

#include <cmath>

#include "compress/codec_util.h"
#include "compress/cpu_kernels.h"
#include "compress/payload_decoder.h"
#include "compress/payload_writer.h"

namespace psrt::compress {

std::unique_ptr<CodecState> SignSgdCodec::make_state(const TensorInfo& info) const {
  return std::make_unique<BasicState>(info);
}

Status SignSgdCodec::encode(CodecState& state, const ChunkInput& chunk,
                            std::vector<uint8_t>& payload) const {
  Result<BasicState*> checked = checked_state<BasicState>(state, chunk, name());
  if (!checked) return checked.status();
  const std::span<const float> g = chunk.values;
  const double total = sum_abs(g);
  if (!std::isfinite(total))
    return Status::error("signsgd: gradient chunk holds a NaN or an infinity");
  const float scale = g.empty() ? 0.0f : static_cast<float>(total / static_cast<double>(g.size()));
  write_signs(id(), g, scale, payload);
  count(**checked, g.size(), g.size(), payload.size());
  return Status::ok();
}

Status SignSgdCodec::decode_accumulate(std::span<const uint8_t> payload, std::span<float> out,
                                       float weight) const {
  return accumulate_payload(payload, out, weight,
                            DecodeOptions{.expect = id(), .signs_as_votes = majority_vote_});
}

Status SignSgdCodec::accumulate_sent(std::span<const uint8_t> payload, std::span<float> out,
                                     float weight) const {
  return accumulate_payload(payload, out, weight, DecodeOptions{.expect = id()});
}

void SignSgdCodec::finish_aggregate(std::span<float> sum, int /*num_payloads*/) const {
  if (!majority_vote_) return;
  for (float& v : sum) v = v > 0.0f ? 1.0f : (v < 0.0f ? -1.0f : 0.0f);
}

EncodeStats SignSgdCodec::stats(const CodecState& state) const { return basic_stats(state); }

}  // namespace psrt::compress
