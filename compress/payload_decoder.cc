#include "compress/payload_decoder.h"

#include <string>

#include "compress/wire_format.h"

namespace psrt::compress {

namespace {

// kSignTable[byte][k] = -1 if bit k of byte is set, else +1.
struct SignTable {
  float row[256][8];
  constexpr SignTable() : row() {
    for (int b = 0; b < 256; ++b) {
      for (int k = 0; k < 8; ++k) row[b][k] = ((b >> k) & 1) ? -1.0f : 1.0f;
    }
  }
  const float* operator[](unsigned b) const { return row[b]; }
};
constexpr SignTable kSignTable;

}  // namespace

Status accumulate_payload(std::span<const uint8_t> payload, std::span<float> out, float weight,
                          const DecodeOptions& options) {
  Result<PayloadView> parsed = parse_payload(payload);
  if (!parsed) return parsed.status();
  const PayloadView& view = parsed.value();
  const PayloadHeader& h = view.header;
  if (h.codec != options.expect) {
    return Status::error("compress payload: codec " + std::string(codec_name(h.codec)) +
                         ", expected " + std::string(codec_name(options.expect)));
  }
  if (h.length != out.size()) {
    return Status::error("compress payload: length " + std::to_string(h.length) +
                         " != chunk length " + std::to_string(out.size()));
  }
  if (h.value_mode == ValueMode::kLog8 && options.codebooks == nullptr) {
    return Status::error("compress payload: log8 values not expected for this codec");
  }
  if (Status s = validate_contents(view); !s) return s;

  float* dst = out.data();
  const uint8_t* values = view.values.data();
  switch (h.value_mode) {
    case ValueMode::kFp32: {
      if (h.index_mode == IndexMode::kAll) {
        for (uint32_t i = 0; i < h.count; ++i) dst[i] += weight * get_f32(values + 4 * size_t{i});
      } else {
        uint32_t j = 0;
        for_each_index(view,
                       [&](uint32_t i) { dst[i] += weight * get_f32(values + 4 * size_t{j++}); });
      }
      break;
    }
    case ValueMode::kLog8: {
      const LogCodebook& book = options.codebooks->get(h.log_range);
      uint32_t j = 0;
      for_each_index(view,
                     [&](uint32_t i) { dst[i] += weight * book.decode(values[j++], view.scale); });
      break;
    }
    case ValueMode::kSign: {
      const float magnitude = options.signs_as_votes ? 1.0f : view.scale;
      const float pos = weight * magnitude;
      if (h.index_mode != IndexMode::kAll) {  // ternary: the present elements' signs
        uint32_t j = 0;
        for_each_index(view, [&](uint32_t i) {
          dst[i] += ((values[j >> 3] >> (j & 7)) & 1u) ? -pos : pos;
          ++j;
        });
        break;
      }
      const uint32_t full = h.count / 8;
      for (uint32_t b = 0; b < full; ++b) {
        const unsigned bits = values[b];
        float* d = dst + 8 * size_t{b};
        for (unsigned k = 0; k < 8; ++k) d[k] += kSignTable[bits][k] * pos;
      }
      for (uint32_t i = full * 8; i < h.count; ++i) {
        dst[i] += ((values[i >> 3] >> (i & 7)) & 1u) ? -pos : pos;
      }
      break;
    }
  }
  return Status::ok();
}

}  // namespace psrt::compress
