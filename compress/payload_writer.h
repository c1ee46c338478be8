// Writing payloads (see wire_format.h): dense fp32, sparse fp32, sparse log8, sparse signs
// (ternary), sign bits.
// Sparse indices take delta+varint or a bitmap, whichever is smaller.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "compress/codec.h"

namespace psrt::compress {

// Bytes the delta+varint encoding of these strictly increasing indices takes.
size_t varint_index_bytes(std::span<const uint32_t> indices);

void write_dense_fp32(CodecId codec, std::span<const float> values, std::vector<uint8_t>& out);

// values[j] = chunk[indices[j]].
void write_sparse_fp32(CodecId codec, std::span<const float> chunk,
                       std::span<const uint32_t> indices, std::vector<uint8_t>& out);

void write_sparse_log8(CodecId codec, uint32_t length, std::span<const uint32_t> indices,
                       std::span<const uint8_t> codes, int log_range, float scale,
                       std::vector<uint8_t>& out);

// Ternary values: the sign bits of chunk[indices[j]] (1 = negative), packed, with one
// magnitude (`scale`) for all of them.
void write_sparse_signs(CodecId codec, std::span<const float> chunk,
                        std::span<const uint32_t> indices, float scale, std::vector<uint8_t>& out);

// Sign bits of `chunk` (1 = negative), packed, with the scale.
void write_signs(CodecId codec, std::span<const float> chunk, float scale,
                 std::vector<uint8_t>& out);

}  // namespace psrt::compress
