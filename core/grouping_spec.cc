#include "core/grouping_spec.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace psrt {

namespace {

std::vector<std::string> split_colons(const std::string& text) {
  std::vector<std::string> parts(1);
  for (char c : text) {
    if (c == ':') {
      parts.emplace_back();
    } else {
      parts.back() += c;
    }
  }
  return parts;
}

std::optional<double> parse_ms(const std::string& text) {
  std::string t = text;
  if (t.size() > 2 && t.compare(t.size() - 2, 2, "ms") == 0) t.resize(t.size() - 2);
  if (t.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  // Up to a second: the worker holds each fused group until the timer's next tick.
  if (end != t.c_str() + t.size() || !std::isfinite(v) || v < 0 || v > 1000) return std::nullopt;
  return v;
}

}  // namespace

std::optional<uint64_t> parse_byte_size(const std::string& text) {
  if (text.empty() || !(std::isdigit(static_cast<unsigned char>(text[0])) || text[0] == '.')) {
    return std::nullopt;
  }
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  std::string unit(end);
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  double mult = 0;
  if (unit.empty() || unit == "b") mult = 1;
  if (unit == "kib") mult = 1024.0;
  if (unit == "mib") mult = 1024.0 * 1024;
  if (unit == "gib") mult = 1024.0 * 1024 * 1024;
  if (unit == "kb") mult = 1e3;
  if (unit == "mb") mult = 1e6;
  if (unit == "gb") mult = 1e9;
  const double bytes = v * mult;
  if (mult == 0 || !std::isfinite(v) || !(bytes >= 1) || bytes > 1e15 ||
      bytes != std::floor(bytes)) {
    return std::nullopt;
  }
  return static_cast<uint64_t>(bytes);
}

std::optional<GroupingSpec> parse_grouping(const std::string& text, std::string* error) {
  const auto parts = split_colons(text);
  GroupingSpec s;
  bool ok = false;
  const std::string& k = parts[0];
  if (k == "none" && parts.size() == 1) {
    ok = true;
  } else if (k == "auto" && parts.size() == 1) {
    s.kind = GroupingSpec::Kind::kAuto;
    ok = true;
  } else if (k == "mgwfbp" && parts.size() == 1) {
    s.kind = GroupingSpec::Kind::kMgwfbp;
    ok = true;
  } else if (k == "size" && parts.size() == 2) {
    s.kind = GroupingSpec::Kind::kSize;
    const auto b = parse_byte_size(parts[1]);
    ok = b.has_value();
    s.bytes = b.value_or(0);
  } else if (k == "ddp" && parts.size() == 3) {
    s.kind = GroupingSpec::Kind::kDdp;
    const auto b = parse_byte_size(parts[1]);
    const auto f = parse_byte_size(parts[2]);
    ok = b && f;
    s.bytes = b.value_or(0);
    s.first_bytes = f.value_or(0);
  } else if (k == "horovod" && parts.size() == 3) {
    s.kind = GroupingSpec::Kind::kHorovod;
    const auto b = parse_byte_size(parts[1]);
    const auto ms = parse_ms(parts[2]);
    ok = b && ms;
    s.bytes = b.value_or(0);
    s.cycle_ms = ms.value_or(0);
  }
  if (ok) return s;
  if (error) {
    *error = "'" + text +
             "' is not a grouping: none, auto, size:BYTES, ddp:BYTES:FIRST_BYTES, "
             "horovod:BYTES:CYCLE_MS (0 to 1000 ms) or mgwfbp (sizes like 4MiB, 25MiB, 65536: "
             "whole bytes from 1 to 10^15, in B, KiB, MiB, GiB, kB, MB or GB)";
  }
  return std::nullopt;
}

std::string GroupingSpec::text() const {
  char buf[96];
  switch (kind) {
    case Kind::kNone:
      return "none";
    case Kind::kAuto:
      return "auto";
    case Kind::kMgwfbp:
      return "mgwfbp";
    case Kind::kSize:
      std::snprintf(buf, sizeof buf, "size:%llu", static_cast<unsigned long long>(bytes));
      return buf;
    case Kind::kDdp:
      std::snprintf(buf, sizeof buf, "ddp:%llu:%llu", static_cast<unsigned long long>(bytes),
                    static_cast<unsigned long long>(first_bytes));
      return buf;
    case Kind::kHorovod:
      std::snprintf(buf, sizeof buf, "horovod:%llu:%gms", static_cast<unsigned long long>(bytes),
                    cycle_ms);
      return buf;
  }
  return "none";
}

}  // namespace psrt
