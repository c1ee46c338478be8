// The bookkeeping of the CUDA encoder's select pass (cuda/lads_kernels.cu), as plain host/device
// functions so that a CPU test (tests/compress/lads_select_test.cc) runs exactly this code: each
// thread summarises the kept elements of its stretch, the summaries are scanned (within a block,
// then across tiles by the decoupled look-back) with an associative operator, and each thread
// writes its kept elements' delta varints and codes at the offsets its exclusive prefix gives. The
// output equals payload_writer's delta+varint index section and LogCodebook's codes.
// No CUDA header.
#pragma once

#include <cstdint>

#include "core/host_device.h"

namespace psrt::compress {

// The kept elements of a stretch of a chunk.
struct KeptSummary {
  uint32_t count;  // 0: nothing kept (the other fields are then meaningless)
  uint32_t first;  // index of the first kept element
  uint32_t last;   // index of the last
  uint32_t bytes;  // varint bytes of every kept element's delta but the first's
};

PSRT_HOST_DEVICE inline uint32_t varint_len(uint32_t v) {
  return v < (1u << 7) ? 1 : v < (1u << 14) ? 2 : v < (1u << 21) ? 3 : v < (1u << 28) ? 4 : 5;
}

// a then b. Associative, with {0, ...} as identity: b's first delta is counted once a's last
// index is known.
struct CombineKept {
  PSRT_HOST_DEVICE KeptSummary operator()(const KeptSummary& a, const KeptSummary& b) const {
    if (a.count == 0) return b;
    if (b.count == 0) return a;
    return {a.count + b.count, a.first, b.last,
            a.bytes + varint_len(b.first - a.last - 1) + b.bytes};
  }
};

// Varint bytes of everything a summary covers, from the chunk's start (the first delta is the
// first index itself).
PSRT_HOST_DEVICE inline uint32_t varint_bytes(const KeptSummary& s) {
  return s.count == 0 ? 0 : varint_len(s.first) + s.bytes;
}

// Elements first .. first + count - 1 (values v[0 .. count)), those at index < n with |v| >= tau:
// their summary, and bit k of *mask for v[k]. A NaN tau keeps nothing.
PSRT_HOST_DEVICE inline KeptSummary summarize_kept(const float* v, int count, uint32_t first,
                                                   uint32_t n, float tau, uint32_t* mask) {
  KeptSummary s{0, 0, 0, 0};
  *mask = 0;
  for (int k = 0; k < count; ++k) {
    const uint32_t i = first + static_cast<uint32_t>(k);
    const float a = v[k] < 0.0f ? -v[k] : v[k];
    if (i < n && a >= tau) {
      *mask |= 1u << k;
      if (s.count == 0) {
        s.first = i;
      } else {
        s.bytes += varint_len(i - s.last - 1);
      }
      s.last = i;
      ++s.count;
    }
  }
  return s;
}

// LogCodebook::encode with the chunk's thresholds t (|v| >= t[0]).
PSRT_HOST_DEVICE inline uint8_t log8_code(float v, const float* t) {
  const float a = v < 0.0f ? -v : v;
  unsigned c = 0;
  for (unsigned step = 64; step != 0; step >>= 1) c += (a >= t[c + step]) ? step : 0;
  return static_cast<uint8_t>(c | (v < 0.0f ? 0x80u : 0u));
}

// Writes the kept elements (bits of mask) of the stretch starting at index `first`, given
// `before`, the summary of everything kept before it: delta varints into varints, and per kept
// element its code (quant_bits 8, thresholds t) or fp32 bits (quant_bits 32) into values and its
// index into indices, at its rank.
PSRT_HOST_DEVICE inline void write_kept(const float* v, int count, uint32_t mask, uint32_t first,
                                        const KeptSummary& before, int quant_bits, const float* t,
                                        uint8_t* varints, uint8_t* values, uint32_t* indices) {
  uint32_t pos = varint_bytes(before), prev = before.last, rank = before.count;
  bool have_prev = before.count > 0;
  for (int k = 0; k < count; ++k) {
    if ((mask >> k & 1u) == 0) continue;
    const uint32_t i = first + static_cast<uint32_t>(k);
    uint32_t d = have_prev ? i - prev - 1 : i;
    while (d >= 0x80u) {
      varints[pos++] = static_cast<uint8_t>(d | 0x80u);
      d >>= 7;
    }
    varints[pos++] = static_cast<uint8_t>(d);
    have_prev = true;
    prev = i;
    if (quant_bits == 32) {
      const float x = v[k];
      const auto* b = reinterpret_cast<const uint8_t*>(&x);
      for (int q = 0; q < 4; ++q) values[4 * rank + q] = b[q];
    } else {
      values[rank] = log8_code(v[k], t);
    }
    indices[rank] = i;
    ++rank;
  }
}

}  // namespace psrt::compress
