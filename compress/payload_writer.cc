#include "compress/payload_writer.h"

#include <cmath>
#include <cstring>

#if defined(__SSE2__)
#include <xmmintrin.h>
#endif

#include "compress/wire_format.h"

namespace psrt::compress {

namespace {

inline size_t varint_size(uint32_t v) {
  return v < (1u << 7) ? 1 : v < (1u << 14) ? 2 : v < (1u << 21) ? 3 : v < (1u << 28) ? 4 : 5;
}

inline uint8_t* put_varint(uint8_t* p, uint32_t v) {
  while (v >= 0x80u) {
    *p++ = static_cast<uint8_t>(v | 0x80u);
    v >>= 7;
  }
  *p++ = static_cast<uint8_t>(v);
  return p;
}

// Writes header + indices; returns the offset where values start.
size_t write_indices(PayloadHeader h, std::span<const uint32_t> indices, size_t value_size,
                     bool has_scale, std::vector<uint8_t>& out) {
  const size_t varint_bytes = varint_index_bytes(indices);
  const size_t bitmap = bitmap_bytes(h.length);
  h.index_mode = varint_bytes <= bitmap ? IndexMode::kVarint : IndexMode::kBitmap;
  h.index_bytes = static_cast<uint32_t>(varint_bytes <= bitmap ? varint_bytes : bitmap);
  out.resize(kHeaderBytes + h.index_bytes + value_size + (has_scale ? 4 : 0));
  write_header(h, out);
  uint8_t* p = out.data() + kHeaderBytes;
  if (h.index_mode == IndexMode::kVarint) {
    uint32_t prev = 0;
    for (size_t j = 0; j < indices.size(); ++j) {
      p = put_varint(p, j == 0 ? indices[j] : indices[j] - prev - 1);
      prev = indices[j];
    }
  } else {
    std::memset(p, 0, bitmap);
    for (uint32_t i : indices) p[i >> 3] |= static_cast<uint8_t>(1u << (i & 7));
  }
  return kHeaderBytes + h.index_bytes;
}

}  // namespace

size_t varint_index_bytes(std::span<const uint32_t> indices) {
  size_t bytes = 0;
  uint32_t prev = 0;
  for (size_t j = 0; j < indices.size(); ++j) {
    bytes += varint_size(j == 0 ? indices[j] : indices[j] - prev - 1);
    prev = indices[j];
  }
  return bytes;
}

void write_dense_fp32(CodecId codec, std::span<const float> values, std::vector<uint8_t>& out) {
  PayloadHeader h;
  h.codec = codec;
  h.length = h.count = static_cast<uint32_t>(values.size());
  out.resize(kHeaderBytes + values.size_bytes());
  write_header(h, out);
  if (!values.empty()) std::memcpy(out.data() + kHeaderBytes, values.data(), values.size_bytes());
}

void write_sparse_fp32(CodecId codec, std::span<const float> chunk,
                       std::span<const uint32_t> indices, std::vector<uint8_t>& out) {
  PayloadHeader h;
  h.codec = codec;
  h.value_mode = ValueMode::kFp32;
  h.length = static_cast<uint32_t>(chunk.size());
  h.count = static_cast<uint32_t>(indices.size());
  const size_t at = write_indices(h, indices, indices.size() * 4, false, out);
  uint8_t* p = out.data() + at;
  for (size_t j = 0; j < indices.size(); ++j) put_f32(p + 4 * j, chunk[indices[j]]);
}

void write_sparse_log8(CodecId codec, uint32_t length, std::span<const uint32_t> indices,
                       std::span<const uint8_t> codes, int log_range, float scale,
                       std::vector<uint8_t>& out) {
  PayloadHeader h;
  h.codec = codec;
  h.value_mode = ValueMode::kLog8;
  h.log_range = static_cast<uint8_t>(log_range);
  h.length = length;
  h.count = static_cast<uint32_t>(indices.size());
  const size_t at = write_indices(h, indices, codes.size(), true, out);
  if (!codes.empty()) std::memcpy(out.data() + at, codes.data(), codes.size());
  put_f32(out.data() + at + codes.size(), scale);
}

void write_sparse_signs(CodecId codec, std::span<const float> chunk,
                        std::span<const uint32_t> indices, float scale, std::vector<uint8_t>& out) {
  PayloadHeader h;
  h.codec = codec;
  h.value_mode = ValueMode::kSign;
  h.length = static_cast<uint32_t>(chunk.size());
  h.count = static_cast<uint32_t>(indices.size());
  const size_t bytes = bitmap_bytes(h.count);
  const size_t at = write_indices(h, indices, bytes, true, out);
  uint8_t* p = out.data() + at;
  std::memset(p, 0, bytes);
  for (size_t j = 0; j < indices.size(); ++j) {
    if (std::signbit(chunk[indices[j]])) p[j >> 3] |= static_cast<uint8_t>(1u << (j & 7));
  }
  put_f32(p + bytes, scale);
}

void write_signs(CodecId codec, std::span<const float> chunk, float scale,
                 std::vector<uint8_t>& out) {
  PayloadHeader h;
  h.codec = codec;
  h.value_mode = ValueMode::kSign;
  h.length = h.count = static_cast<uint32_t>(chunk.size());
  const size_t bytes = bitmap_bytes(h.count);
  out.resize(kHeaderBytes + bytes + 4);
  write_header(h, out);
  uint8_t* p = out.data() + kHeaderBytes;
  const size_t full = chunk.size() / 8;
  for (size_t b = 0; b < full; ++b) {
#if defined(__SSE2__)
    const int m = _mm_movemask_ps(_mm_loadu_ps(&chunk[8 * b])) |
                  (_mm_movemask_ps(_mm_loadu_ps(&chunk[8 * b + 4])) << 4);
#else
    unsigned m = 0;
    for (unsigned k = 0; k < 8; ++k) m |= (std::signbit(chunk[8 * b + k]) ? 1u : 0u) << k;
#endif
    p[b] = static_cast<uint8_t>(m);
  }
  if (full < bytes) {
    unsigned m = 0;
    for (size_t i = full * 8; i < chunk.size(); ++i) {
      m |= (std::signbit(chunk[i]) ? 1u : 0u) << (i - full * 8);
    }
    p[full] = static_cast<uint8_t>(m);
  }
  put_f32(p + bytes, scale);
}

}  // namespace psrt::compress
