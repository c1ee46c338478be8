// LADS, the stateless step of LACO for one chunk: threshold tau = alpha * RMS(chunk), keep
// |g| >= tau, quantize the kept values, write the payload. The CUDA path mirrors exactly this.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "compress/log_quant.h"
#include "compress/moments.h"
#include "core/status.h"

namespace psrt::compress {

struct LadsParams {
  float alpha = 0;       // threshold in units of the chunk's RMS
  int quant_bits = 8;    // 8: log8 codes; 32: fp32 values; 1: signs x mean |kept| (ternary)
  int log_range = 12;    // octaves of the log8 code
};

struct LadsScratch {
  std::vector<uint32_t> indices;
  std::vector<uint8_t> codes;
};

struct LadsResult {
  float rms = 0;
  float threshold = 0;  // the effective threshold, after the log8 floor
  float scale = 0;      // max |g| of the chunk (quant_bits 1: the mean |g| of the kept elements)
  uint32_t kept = 0;
};

// The threshold LADS uses for a chunk with this RMS and max: max(alpha * rms, floor), floor =
// scale * b[0] for log8 (values below the code range stay in the residual), else the smallest
// positive float (zeros are never sent).
float lads_threshold(const LadsParams& params, const LogCodebook& book, float rms, float scale);

// Encodes values as a LACO payload. `moments`: chunk_moments(values) (of `select` if given) if
// the caller has them (saves a pass), else null. `select`: if not empty, the threshold applies
// to it instead of the values (same length; quant_bits 1 or 32 only): the elements with
// |select| >= tau are sent, with their values. Error: a NaN or infinity in values (or select).
Result<LadsResult> lads_encode(std::span<const float> values, const LadsParams& params,
                               const LogCodebook& book, LadsScratch& scratch,
                               std::vector<uint8_t>& payload, const ChunkMoments* moments = nullptr,
                               std::span<const float> select = {});

}  // namespace psrt::compress
