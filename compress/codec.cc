#include "compress/codec.h"

#include <algorithm>

namespace psrt::compress {

std::string_view codec_name(CodecId id) {
  switch (id) {
    case CodecId::kNone: return "none";
    case CodecId::kLaco: return "laco";
    case CodecId::kSignSgd: return "signsgd";
    case CodecId::kGradDrop: return "graddrop";
    case CodecId::kTopK: return "topk";
  }
  return "unknown";
}

void Codec::finish_aggregate(std::span<float> /*sum*/, int /*num_payloads*/) const {}

Status Codec::decode(std::span<const uint8_t> payload, std::span<float> out) const {
  std::vector<float> scratch(out.size(), 0.0f);
  PSRT_RETURN_IF_ERROR(decode_accumulate(payload, scratch, 1.0f));
  std::copy(scratch.begin(), scratch.end(), out.begin());
  return Status::ok();
}

}  // namespace psrt::compress
