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
  int quant_bits = 8;    // 8: log8 codes; 32: fp32 values
  int log_range = 12;    // octaves of the log8 code
};

struct LadsScratch {
  std::vector<uint32_t> indices;
  std::vector<uint8_t> codes;
};

struct LadsResult {
  float rms = 0;
  float threshold = 0;  // the effective threshold, after the log8 floor
  float scale = 0;      // max |g| of the chunk
  uint32_t kept = 0;
};

// The threshold LADS uses for a chunk with this RMS and max: max(alpha * rms, floor), floor =
// scale * b[0] for log8 (values below the code range stay in the residual), else the smallest
// positive float (zeros are never sent).
float lads_threshold(const LadsParams& params, const LogCodebook& book, float rms, float scale);

// Encodes values as a LACO payload. `moments`: chunk_moments(values) if the caller has them
// (saves a pass), else null. Error: a NaN or infinity in values.
Result<LadsResult> lads_encode(std::span<const float> values, const LadsParams& params,
                               const LogCodebook& book, LadsScratch& scratch,
                               std::vector<uint8_t>& payload,
                               const ChunkMoments* moments = nullptr);

}  // namespace psrt::compress
