#include "scheduler/sim/units.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace psrt::sim {

namespace {

// Splits "12.5MiB" into 12.5 and "MiB". False when there is no leading number.
bool split(const std::string& text, double& value, std::string& unit) {
  if (text.empty() || !(std::isdigit(static_cast<unsigned char>(text[0])) || text[0] == '.')) {
    return false;
  }
  char* end = nullptr;
  value = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || !std::isfinite(value)) return false;
  unit = std::string(end);
  return true;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The multiplier of a decimal prefix letter ("", k, m, g, t), or 0.
double decimal_prefix(const std::string& p) {
  if (p.empty()) return 1;
  if (p == "k") return 1e3;
  if (p == "m") return 1e6;
  if (p == "g") return 1e9;
  if (p == "t") return 1e12;
  return 0;
}

}  // namespace

std::optional<uint64_t> parse_size(const std::string& text) {
  double v = 0;
  std::string unit;
  if (!split(text, v, unit)) return std::nullopt;
  unit = lower(unit);
  double mult = 0;
  if (unit.empty() || unit == "b")
    mult = 1;
  else if (unit == "kib")
    mult = 1024.0;
  else if (unit == "mib")
    mult = 1024.0 * 1024;
  else if (unit == "gib")
    mult = 1024.0 * 1024 * 1024;
  else if (unit == "kb")
    mult = 1e3;
  else if (unit == "mb")
    mult = 1e6;
  else if (unit == "gb")
    mult = 1e9;
  if (mult == 0) return std::nullopt;
  const double bytes = v * mult;
  if (!(bytes >= 1) || bytes > 1e18 || bytes != std::floor(bytes)) return std::nullopt;
  return static_cast<uint64_t>(bytes);
}

std::optional<double> parse_bandwidth(const std::string& text) {
  double v = 0;
  std::string unit;
  if (!split(text, v, unit) || !(v > 0)) return std::nullopt;
  // Bytes per second: [K|M|G|T][i]B/s with an upper-case B.
  if (unit.size() >= 3 && unit.compare(unit.size() - 3, 3, "B/s") == 0) {
    std::string p = unit.substr(0, unit.size() - 3);
    bool binary = false;
    if (!p.empty() && p.back() == 'i') {
      binary = true;
      p.pop_back();
      if (p.empty()) return std::nullopt;
    }
    const double dec = decimal_prefix(lower(p));
    if (dec == 0) return std::nullopt;
    double mult = dec;
    if (binary) mult = std::pow(1024.0, std::round(std::log10(dec) / 3));
    return v * mult;
  }
  // Bits per second: [k|m|g|t](bit|bit/s|bits/s|bps), any case.
  const std::string u = lower(unit);
  for (const char* suffix : {"bits/s", "bit/s", "bit", "bps"}) {
    const std::string s(suffix);
    if (u.size() >= s.size() && u.compare(u.size() - s.size(), s.size(), s) == 0) {
      const double mult = decimal_prefix(u.substr(0, u.size() - s.size()));
      if (mult == 0) return std::nullopt;
      return v * mult / 8;
    }
  }
  return std::nullopt;
}

std::string format_bandwidth(double bytes_per_s) {
  const double bits = bytes_per_s * 8;
  const char* unit = "bit/s";
  double v = bits;
  if (bits >= 1e9) {
    v = bits / 1e9;
    unit = "Gbit/s";
  } else if (bits >= 1e6) {
    v = bits / 1e6;
    unit = "Mbit/s";
  } else if (bits >= 1e3) {
    v = bits / 1e3;
    unit = "kbit/s";
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4g %s", v, unit);
  return buf;
}

std::string format_size(uint64_t bytes) {
  char buf[64];
  if (bytes >= (1u << 30) && bytes % (1u << 20) == 0) {
    std::snprintf(buf, sizeof buf, "%.4g GiB", static_cast<double>(bytes) / (1u << 30));
  } else if (bytes >= (1u << 20) && bytes % (1u << 10) == 0) {
    std::snprintf(buf, sizeof buf, "%.4g MiB", static_cast<double>(bytes) / (1u << 20));
  } else if (bytes >= (1u << 10) && bytes % (1u << 10) == 0) {
    std::snprintf(buf, sizeof buf, "%.4g KiB", static_cast<double>(bytes) / (1u << 10));
  } else {
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  }
  return buf;
}

}  // namespace psrt::sim
