// The payload of one chunk, chunk-local so that it decodes alone (preemptive scheduling sends
// compressed chunks out of order). Little-endian; all sizes are checked before any byte is read.
//
//   offset size  field
//   0      1     codec id (CodecId)
//   1      1     format version (kWireVersion)
//   2      1     index mode: 0 all (dense), 1 delta+varint, 2 bitmap
//   3      1     value mode: 0 fp32, 1 log8 (sign bit + 7-bit log code), 2 sign bits (each
//                present element decodes to +-scale; with sparse indices: ternary values)
//   4      1     log2 dynamic range of log8 codes (1..64), else 0
//   5      3     zero
//   8      4     length: elements in the chunk
//   12     4     count: elements present in the payload
//   16     4     index bytes
//   20     ...   indices: none | varints (first index, then gap-1 to the next) | bitmap of length
//   bits
//          ...   values: fp32 x count | code byte x count | ceil(count/8) sign bytes (1 = negative)
//          4     scale, fp32 (log8 and sign modes only)
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "compress/codec.h"
#include "core/status.h"

namespace psrt::compress {

static_assert(std::endian::native == std::endian::little, "the wire format is little-endian");

inline constexpr uint8_t kWireVersion = 1;
inline constexpr size_t kHeaderBytes = 20;
inline constexpr int kMaxLogRange = 64;

enum class IndexMode : uint8_t { kAll = 0, kVarint = 1, kBitmap = 2 };
enum class ValueMode : uint8_t { kFp32 = 0, kLog8 = 1, kSign = 2 };

struct PayloadHeader {
  CodecId codec = CodecId::kNone;
  IndexMode index_mode = IndexMode::kAll;
  ValueMode value_mode = ValueMode::kFp32;
  uint8_t log_range = 0;
  uint32_t length = 0;
  uint32_t count = 0;
  uint32_t index_bytes = 0;
};

// A parsed payload whose sizes agree with each other and with the buffer.
struct PayloadView {
  PayloadHeader header;
  std::span<const uint8_t> indices;
  std::span<const uint8_t> values;
  float scale = 0.0f;
};

// Bytes the values section takes for `count` elements.
size_t value_bytes(ValueMode mode, uint32_t count);
// Bytes a bitmap of `length` bits takes.
inline size_t bitmap_bytes(uint32_t length) { return (size_t{length} + 7) / 8; }

// Checks the header and every size; does not look at index or value contents.
Result<PayloadView> parse_payload(std::span<const uint8_t> payload);

// Checks index contents (range, order, bitmap population) and value contents (finite fp32).
Status validate_contents(const PayloadView& view);

// Calls fn(position) for each present element in increasing order. The view must have passed
// validate_contents.
template <typename Fn>
void for_each_index(const PayloadView& view, Fn&& fn);

// Writes the header into payload[0..kHeaderBytes), resizing payload to at least that.
void write_header(const PayloadHeader& header, std::vector<uint8_t>& payload);

// Little-endian field helpers.
inline void put_u32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }
inline void put_f32(uint8_t* p, float v) { std::memcpy(p, &v, 4); }
inline uint32_t get_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline float get_f32(const uint8_t* p) {
  float v;
  std::memcpy(&v, p, 4);
  return v;
}

// ---- implementation of the template ----

template <typename Fn>
void for_each_index(const PayloadView& view, Fn&& fn) {
  const PayloadHeader& h = view.header;
  switch (h.index_mode) {
    case IndexMode::kAll:
      for (uint32_t i = 0; i < h.count; ++i) fn(i);
      return;
    case IndexMode::kBitmap: {
      const uint8_t* bits = view.indices.data();
      const size_t words = view.indices.size() / 8;
      for (size_t w = 0; w < words; ++w) {
        uint64_t m;
        std::memcpy(&m, bits + 8 * w, 8);
        while (m != 0) {
          fn(static_cast<uint32_t>(w * 64 + std::countr_zero(m)));
          m &= m - 1;
        }
      }
      for (size_t b = words * 8; b < view.indices.size(); ++b) {
        unsigned m = bits[b];
        while (m != 0) {
          fn(static_cast<uint32_t>(b * 8 + std::countr_zero(m)));
          m &= m - 1;
        }
      }
      return;
    }
    case IndexMode::kVarint: {
      const uint8_t* p = view.indices.data();
      uint64_t pos = 0;
      for (uint32_t j = 0; j < h.count; ++j) {
        uint64_t v = 0;
        int shift = 0;
        while (true) {
          const uint8_t b = *p++;
          v |= uint64_t{b & 0x7fu} << shift;
          if ((b & 0x80u) == 0) break;
          shift += 7;
        }
        pos = (j == 0) ? v : pos + 1 + v;
        fn(static_cast<uint32_t>(pos));
      }
      return;
    }
  }
}

}  // namespace psrt::compress
