#include "compress/ratio_histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <vector>

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
  // Four interleaved sub-histograms: neighbouring elements of a gradient mostly fall in the same
  // few bins, and one array would serialise on those counters' read-modify-write. Blocks of at
  // most 2^32 - 1 elements keep the 32-bit counts from overflowing.
  // Below a few times the bin count, clearing and summing the sub-arrays costs more than the
  // serialised counting they avoid: count directly.
  constexpr size_t kWays = 4;
  constexpr size_t kBlock = size_t{1} << 30;
  auto bin = [inv_rms](float v) {
    // Sign bit is clear, so the index is < 4096; NaN lands in the top bins, harmlessly.
    return std::bit_cast<uint32_t>(std::fabs(v) * inv_rms) >> kShift;
  };
  total_ += values.size();
  if (values.size() < kWays * kBins) {
    for (float v : values) ++counts_[bin(v)];
    return;
  }
  std::vector<uint32_t> sub(kWays * kBins);
  for (size_t start = 0; start < values.size(); start += kBlock) {
    const std::span<const float> block =
        values.subspan(start, std::min(kBlock, values.size() - start));
    std::fill(sub.begin(), sub.end(), 0u);
    size_t i = 0;
    for (; i + kWays <= block.size(); i += kWays) {
      for (size_t w = 0; w < kWays; ++w) ++sub[w * kBins + bin(block[i + w])];
    }
    for (; i < block.size(); ++i) ++sub[bin(block[i])];
    for (size_t b = 0; b < size_t{kBins}; ++b) {
      counts_[b] += uint64_t{sub[b]} + sub[kBins + b] + sub[2 * kBins + b] + sub[3 * kBins + b];
    }
  }
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

void RatioHistogram::save(ByteWriter& out) const {
  out.put<uint64_t>(total_);
  out.bytes(counts_.data(), sizeof counts_);
}

bool RatioHistogram::load(ByteReader& in) {
  total_ = in.get<uint64_t>();
  return in.take(counts_.data(), sizeof counts_);
}

}  // namespace psrt::compress
