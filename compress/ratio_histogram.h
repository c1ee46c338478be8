// The distribution of |g| / RMS of a tensor, for choosing LACO's alpha. Bins follow the float
// bit pattern: exponent plus the top 4 mantissa bits, i.e. 16 bins per octave over the whole fp32
// range (4096 bins, no clamping). alpha_for(d) is the (1 - d) quantile, interpolated linearly
// within its bin: keeping |g| >= alpha * RMS keeps a fraction d of the recorded elements.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "core/byte_io.h"

namespace psrt::compress {

class RatioHistogram {
 public:
  static constexpr int kBins = 4096;

  void clear();
  // Records |values[i]| * inv_rms for every i.
  void add(std::span<const float> values, float inv_rms);
  uint64_t total() const { return total_; }
  // The ratio alpha above which a fraction `density` of the recorded elements lies. 0 when empty
  // or density >= 1.
  double alpha_for(double density) const;
  // Checkpoints (Codec::save_state).
  void save(ByteWriter& out) const;
  bool load(ByteReader& in);

 private:
  std::array<uint64_t, kBins> counts_{};
  uint64_t total_ = 0;
};

}  // namespace psrt::compress
