#include "compress/ratio_histogram.h"

#include <bit>
#include <cmath>

namespace psrt::compress {

namespace {
constexpr int kShift = 19;  // 23 mantissa bits - 4 kept
float bin_low(int b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << kShift); }
}  // namespace

void RatioHistogram::clear() {
  counts_.fill(0);
  total_ = 0;
}

void RatioHistogram::add(std::span<const float> values, float inv_rms) {
  for (float v : values) {
    const float x = std::fabs(v) * inv_rms;
    // Sign bit is clear, so the index is < 4096; NaN lands in the top bins, harmlessly.
    ++counts_[std::bit_cast<uint32_t>(x) >> kShift];
  }
  total_ += values.size();
}

double RatioHistogram::alpha_for(double density) const {
  if (total_ == 0 || density >= 1.0) return 0.0;
  const double target = density * static_cast<double>(total_);
  double above = 0;
  for (int b = kBins - 1; b >= 0; --b) {
    const auto c = static_cast<double>(counts_[static_cast<size_t>(b)]);
    if (c > 0 && above + c >= target) {
      const double lo = bin_low(b);
      const double next = b + 1 < kBins ? bin_low(b + 1) : lo;
      const double hi = std::isfinite(next) ? next : lo;
      const double f = (target - above) / c;  // fraction of this bin to keep, from its top
      return hi - f * (hi - lo);
    }
    above += c;
  }
  return 0.0;
}

}  // namespace psrt::compress
