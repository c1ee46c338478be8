#include "compress/lads.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "compress/codec.h"
#include "compress/cpu_kernels.h"
#include "compress/payload_writer.h"

namespace psrt::compress {

float lads_threshold(const LadsParams& params, const LogCodebook& book, float rms, float scale) {
  const float tau = params.alpha * rms;
  const float floor = params.quant_bits == 8 ? scale * book.relative_bounds()[0]
                                             : std::numeric_limits<float>::denorm_min();
  return std::max(tau, std::max(floor, std::numeric_limits<float>::denorm_min()));
}

Result<LadsResult> lads_encode(std::span<const float> values, const LadsParams& params,
                               const LogCodebook& book, LadsScratch& scratch,
                               std::vector<uint8_t>& payload, const ChunkMoments* moments,
                               std::span<const float> select) {
  if (!select.empty() && (select.size() != values.size() || params.quant_bits == 8)) {
    return Status::error("laco: a selection key needs quant_bits 1 or 32 and the values' length");
  }
  const std::span<const float> key = select.empty() ? values : select;
  const ChunkMoments m = moments != nullptr ? *moments : chunk_moments(key);
  if (!m.finite) return Status::error("laco: gradient chunk holds a NaN or an infinity");
  LadsResult r;
  r.scale = m.max_abs;
  r.rms = values.empty()
              ? 0.0f
              : static_cast<float>(std::sqrt(m.sum_squares / static_cast<double>(values.size())));
  r.threshold = lads_threshold(params, book, r.rms, r.scale);
  const auto length = static_cast<uint32_t>(values.size());
  if (params.quant_bits == 1) {  // ternary: sign x the kept elements' mean magnitude
    select_at_least(key, r.threshold, scratch.indices);
    r.kept = static_cast<uint32_t>(scratch.indices.size());
    double sum = 0;
    for (uint32_t i : scratch.indices) sum += std::fabs(values[i]);
    r.scale = r.kept > 0 ? static_cast<float>(sum / r.kept) : 0.0f;
    write_sparse_signs(CodecId::kLaco, values, scratch.indices, r.scale, payload);
    return r;
  }
  if (params.quant_bits == 32) {
    select_at_least(key, r.threshold, scratch.indices);
    r.kept = static_cast<uint32_t>(scratch.indices.size());
    write_sparse_fp32(CodecId::kLaco, values, scratch.indices, payload);
    return r;
  }
  float t[kLogLevels];
  book.thresholds(r.scale, t);
  select_and_code(values, r.threshold, t, scratch.indices, scratch.codes);
  r.kept = static_cast<uint32_t>(scratch.indices.size());
  write_sparse_log8(CodecId::kLaco, length, scratch.indices, scratch.codes, params.log_range,
                    r.scale, payload);
  return r;
}

}  // namespace psrt::compress
