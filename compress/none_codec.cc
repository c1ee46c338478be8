#include "compress/none_codec.h"

#include "compress/codec_util.h"
#include "compress/payload_decoder.h"
#include "compress/payload_writer.h"

namespace psrt::compress {

std::unique_ptr<CodecState> NoneCodec::make_state(const TensorInfo& info) const {
  return std::make_unique<BasicState>(info);
}

Status NoneCodec::encode(CodecState& state, const ChunkInput& chunk,
                         std::vector<uint8_t>& payload) const {
  Result<BasicState*> s = checked_state<BasicState>(state, chunk, name());
  if (!s) return s.status();
  write_dense_fp32(id(), chunk.values, payload);
  count(**s, chunk.values.size(), chunk.values.size(), payload.size());
  return Status::ok();
}

Status NoneCodec::decode_accumulate(std::span<const uint8_t> payload, std::span<float> out,
                                    float weight) const {
  return accumulate_payload(payload, out, weight, DecodeOptions{.expect = id()});
}

EncodeStats NoneCodec::stats(const CodecState& state) const { return basic_stats(state); }

}  // namespace psrt::compress
