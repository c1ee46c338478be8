// libFuzzer: a compressed chunk payload, as the server (pushes) and the workers (compressed
// replies) receive it, through the wire-format checks and every codec's decoder.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "compress/codec_config.h"
#include "compress/registry.h"
#include "compress/wire_format.h"

namespace {

struct Codecs {
  std::vector<std::unique_ptr<psrt::compress::Codec>> all;
  Codecs() {
    for (const char* name : {"none", "laco", "signsgd", "graddrop", "topk"}) {
      psrt::compress::CodecConfig config;
      config.codec = name;
      auto made = psrt::compress::make_codec(config);
      if (!made) __builtin_trap();
      all.push_back(std::move(made.value()));
    }
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Codecs codecs;  // built once: the codecs are stateless decoders
  const std::span<const uint8_t> payload(data, size);
  auto view = psrt::compress::parse_payload(payload);
  const bool valid = view && psrt::compress::validate_contents(*view);
  const uint32_t length = view ? view->header.length : 64;
  // The receiver sizes the destination from its own chunk, not from the payload: try the
  // payload's length (bounded) and a fixed one.
  for (uint32_t n : {std::min<uint32_t>(length, 1u << 20), 64u}) {
    std::vector<float> out(n, 1.0f);
    for (const auto& codec : codecs.all) {
      const auto st = codec->decode_accumulate(payload, out, 0.5f);
      if (st && !valid) __builtin_trap();  // a decoder accepted what the checks refuse
      (void)codec->accumulate_sent(payload, out, 1.0f);
    }
  }
  return 0;
}
