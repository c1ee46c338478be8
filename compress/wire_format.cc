#include "compress/wire_format.h"

#include <cmath>
#include <string>

namespace psrt::compress {

namespace {

Status fail(const std::string& what) { return Status::error("compress payload: " + what); }

}  // namespace

size_t value_bytes(ValueMode mode, uint32_t count) {
  switch (mode) {
    case ValueMode::kFp32: return size_t{count} * 4;
    case ValueMode::kLog8: return size_t{count};
    case ValueMode::kSign: return (size_t{count} + 7) / 8;
  }
  return 0;
}

void write_header(const PayloadHeader& h, std::vector<uint8_t>& payload) {
  if (payload.size() < kHeaderBytes) payload.resize(kHeaderBytes);
  uint8_t* p = payload.data();
  p[0] = static_cast<uint8_t>(h.codec);
  p[1] = kWireVersion;
  p[2] = static_cast<uint8_t>(h.index_mode);
  p[3] = static_cast<uint8_t>(h.value_mode);
  p[4] = h.log_range;
  p[5] = p[6] = p[7] = 0;
  put_u32(p + 8, h.length);
  put_u32(p + 12, h.count);
  put_u32(p + 16, h.index_bytes);
}

Result<PayloadView> parse_payload(std::span<const uint8_t> payload) {
  if (payload.size() < kHeaderBytes) {
    return fail("truncated: " + std::to_string(payload.size()) + " bytes, header needs " +
                std::to_string(kHeaderBytes));
  }
  const uint8_t* p = payload.data();
  if (p[0] > kMaxCodecId) return fail("unknown codec id " + std::to_string(p[0]));
  if (p[1] != kWireVersion) return fail("unsupported version " + std::to_string(p[1]));
  if (p[2] > 2) return fail("unknown index mode " + std::to_string(p[2]));
  if (p[3] > 2) return fail("unknown value mode " + std::to_string(p[3]));
  if (p[5] != 0 || p[6] != 0 || p[7] != 0) return fail("reserved bytes not zero");

  PayloadView view;
  PayloadHeader& h = view.header;
  h.codec = static_cast<CodecId>(p[0]);
  h.index_mode = static_cast<IndexMode>(p[2]);
  h.value_mode = static_cast<ValueMode>(p[3]);
  h.log_range = p[4];
  h.length = get_u32(p + 8);
  h.count = get_u32(p + 12);
  h.index_bytes = get_u32(p + 16);

  if (h.count > h.length) {
    return fail("count " + std::to_string(h.count) + " exceeds length " + std::to_string(h.length));
  }
  if (h.value_mode == ValueMode::kLog8) {
    if (h.log_range < 1 || h.log_range > kMaxLogRange) {
      return fail("log range " + std::to_string(h.log_range) + " outside 1..64");
    }
  } else if (h.log_range != 0) {
    return fail("log range set for a non-log value mode");
  }
  switch (h.index_mode) {
    case IndexMode::kAll:
      if (h.count != h.length) return fail("dense payload with count != length");
      if (h.index_bytes != 0) return fail("dense payload with index bytes");
      break;
    case IndexMode::kBitmap:
      if (h.index_bytes != bitmap_bytes(h.length)) return fail("bitmap size does not match length");
      break;
    case IndexMode::kVarint:
      // Each index takes 1..5 bytes.
      if (uint64_t{h.index_bytes} < h.count || uint64_t{h.index_bytes} > 5ull * h.count) {
        return fail("varint index bytes " + std::to_string(h.index_bytes) +
                    " impossible for count " + std::to_string(h.count));
      }
      break;
  }
  const bool has_scale = h.value_mode != ValueMode::kFp32;
  const uint64_t need = kHeaderBytes + uint64_t{h.index_bytes} +
                        value_bytes(h.value_mode, h.count) + (has_scale ? 4 : 0);
  if (payload.size() != need) {
    return fail((payload.size() < need ? "truncated: " : "trailing bytes: ") +
                std::to_string(payload.size()) + " bytes, header says " + std::to_string(need));
  }
  size_t at = kHeaderBytes;
  view.indices = payload.subspan(at, h.index_bytes);
  at += h.index_bytes;
  view.values = payload.subspan(at, value_bytes(h.value_mode, h.count));
  at += view.values.size();
  if (has_scale) {
    view.scale = get_f32(payload.data() + at);
    if (!std::isfinite(view.scale) || view.scale < 0.0f) {
      return fail("scale " + std::to_string(view.scale) + " not finite and >= 0");
    }
  }
  return view;
}

Status validate_contents(const PayloadView& view) {
  const PayloadHeader& h = view.header;
  if (h.index_mode == IndexMode::kBitmap) {
    uint64_t population = 0;
    for (uint8_t b : view.indices) population += static_cast<uint64_t>(std::popcount(b));
    if (population != h.count) {
      return fail("bitmap holds " + std::to_string(population) + " elements, count says " +
                  std::to_string(h.count));
    }
    const uint32_t tail = h.length % 8;
    if (tail != 0 && (view.indices.back() >> tail) != 0) return fail("bitmap bits past length");
  } else if (h.index_mode == IndexMode::kVarint) {
    const uint8_t* p = view.indices.data();
    const uint8_t* end = p + view.indices.size();
    uint64_t pos = 0;
    for (uint32_t j = 0; j < h.count; ++j) {
      uint64_t v = 0;
      int shift = 0;
      while (true) {
        if (p == end) return fail("varint indices truncated at element " + std::to_string(j));
        const uint8_t b = *p++;
        if (shift == 28 && (b & 0xf0u) != 0) return fail("varint index over 32 bits");
        v |= uint64_t{b & 0x7fu} << shift;
        if ((b & 0x80u) == 0) break;
        shift += 7;
      }
      pos = (j == 0) ? v : pos + 1 + v;
      if (pos >= h.length) {
        return fail("index " + std::to_string(pos) + " out of range for length " +
                    std::to_string(h.length));
      }
    }
    if (p != end) return fail("varint index bytes left over");
  }
  if (h.value_mode == ValueMode::kFp32) {
    for (uint32_t j = 0; j < h.count; ++j) {
      if (!std::isfinite(get_f32(view.values.data() + 4 * size_t{j}))) {
        return fail("value " + std::to_string(j) + " not finite");
      }
    }
  } else if (h.value_mode == ValueMode::kSign && h.count % 8 != 0) {
    if ((view.values.back() >> (h.count % 8)) != 0) return fail("sign bits past count");
  }
  return Status::ok();
}

}  // namespace psrt::compress
