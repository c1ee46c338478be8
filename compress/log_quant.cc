#include "compress/log_quant.h"

#include <cmath>

#include "compress/wire_format.h"

namespace psrt::compress {

LogCodebook::LogCodebook(int range) : range_(range) {
  const double r = range;
  for (int c = 0; c < kLogLevels; ++c) {
    magnitude_[c] = static_cast<float>(std::exp2((c - 127) * r / 127.0));
    const double b = (c == 0) ? -r - r / 254.0 : (c - 127.5) * r / 127.0;
    bound_[c] = static_cast<float>(std::exp2(b));
  }
  magnitude_[127] = 1.0f;
}

double LogCodebook::error_bound() const { return std::exp2(range_ / 254.0) - 1.0; }

LogCodebooks::LogCodebooks() {
  books_.reserve(kMaxLogRange);
  for (int r = 1; r <= kMaxLogRange; ++r) books_.emplace_back(r);
}

}  // namespace psrt::compress
