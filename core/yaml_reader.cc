#include "core/yaml_reader.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include "core/status.h"

namespace psrt {

YamlReader::YamlReader(YAML::Node node, std::string path, std::string where)
    : node_(std::move(node)), path_(std::move(path)), where_(std::move(where)) {
  if (node_ && !node_.IsNull() && !node_.IsMap()) {
    throw ConfigError(where_ + ": " + (path_.empty() ? std::string("document") : path_) +
                      " must be a mapping");
  }
  // yaml-cpp keeps both entries of a repeated key and reads the first: refuse it instead.
  if (!node_.IsMap()) return;
  std::set<std::string> seen;
  for (const auto& kv : node_) {
    const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : std::string("<not a scalar>");
    if (!seen.insert(key).second) fail(key, "appears twice in this mapping; keep one");
  }
}

std::optional<char> control_character(std::string_view s) {
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c < 0x20 && c != '\t') || c == 0x7F) return ch;
  }
  return std::nullopt;
}

std::optional<std::string> control_character_error(std::string_view s) {
  const auto c = control_character(s);
  if (!c) return std::nullopt;
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02x", unsigned(static_cast<unsigned char>(*c)));
  return std::string("holds the control character ") + hex;
}

bool valid_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t len = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      len = 2, cp = c & 0x1Fu;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3, cp = c & 0x0Fu;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4, cp = c & 0x07u;
    } else {
      return false;
    }
    if (i + len > s.size()) return false;
    for (std::size_t k = 1; k < len; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3Fu);
    }
    static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};  // no overlong forms
    if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

std::optional<YAML::Node> YamlReader::value(const std::string& key) const {
  used_.insert(key);
  if (!node_.IsMap() || !node_[key]) return std::nullopt;
  const YAML::Node v = node_[key];
  if (v.IsNull()) fail(key, "has no value (leave the key out for its default)");
  return v;
}

std::string YamlReader::full(const std::string& key) const {
  return path_.empty() ? key : path_ + "." + key;
}

std::string read_yaml_file(const std::string& path, const std::string& what, uint64_t max_bytes) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw ConfigError(path + ": " +
                      (std::filesystem::exists(path, ec) ? "not a regular file" : "no such file") +
                      "; " + what + " is a YAML file");
  }
  if (std::filesystem::file_size(path, ec) > max_bytes) {
    throw ConfigError(path + ": " + what + " of more than " + std::to_string(max_bytes >> 20) +
                      " MiB");
  }
  std::ifstream in(path);
  if (!in) throw ConfigError(path + ": cannot open " + what);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw ConfigError(path + ": cannot read " + what);
  return text;
}

void YamlReader::fail(const std::string& key, const std::string& what) const {
  throw ConfigError(where_ + ": " + full(key) + ": " + what);
}

bool YamlReader::has(const std::string& key) const {
  return node_.IsMap() && node_[key] && !node_[key].IsNull();
}

YamlReader YamlReader::child(const std::string& key) const {
  used_.insert(key);
  YAML::Node sub = node_.IsMap() ? node_[key] : YAML::Node();
  // `job:` with nothing after it (or --set job=) reset the whole section to its defaults, silently.
  if (sub && sub.IsNull()) fail(key, "has no value (leave the section out for its defaults)");
  if (sub && !sub.IsMap()) fail(key, "must be a mapping");
  return YamlReader(sub ? sub : YAML::Node(YAML::NodeType::Map), full(key), where_);
}

std::string YamlReader::get_string(const std::string& key, const std::string& fallback) const {
  const auto found = value(key);
  if (!found) return fallback;
  const YAML::Node& v = *found;
  if (!v.IsScalar()) fail(key, "must be a string");
  if (v.Scalar().size() > kMaxStringBytes) {
    fail(key, "a string of " + std::to_string(v.Scalar().size()) + " bytes; at most " +
                  std::to_string(kMaxStringBytes) + " allowed");
  }
  // YAML is UTF-8; yaml-cpp passes other bytes through, and its emitter would not write them
  // back as read (a profile's names changed on the way through psrt-place --write-profile).
  if (!valid_utf8(v.Scalar())) fail(key, "is not valid UTF-8");
  if (const auto e = control_character_error(v.Scalar())) {
    fail(key, *e + " (a string here is one line)");
  }
  return v.Scalar();
}

std::string YamlReader::get_choice(const std::string& key, const std::string& fallback,
                                   const std::vector<std::string>& allowed) const {
  const std::string v = get_string(key, fallback);
  for (const auto& a : allowed)
    if (a == v) return v;
  std::string list;
  for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
  fail(key, "'" + v + "' is not one of: " + list);
}

namespace {
// The shortest text that reads back as `x` (std::to_string's six decimals showed the bound
// 0.99999999 as 1.000000, beside a refused 1).
std::string shortest(double x) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, x);
  return std::string(buf, r.ptr);
}
}  // namespace

int64_t YamlReader::get_int(const std::string& key, int64_t fallback, int64_t min,
                            int64_t max) const {
  const auto found = value(key);
  if (!found) return fallback;
  const YAML::Node& v = *found;
  int64_t x = 0;
  if (!v.IsScalar() || !YAML::convert<int64_t>::decode(v, x)) {
    fail(key, "'" + (v.IsScalar() ? v.Scalar() : std::string("<not a scalar>")) +
                  "' is not an integer");
  }
  if (x < min || x > max) {
    fail(key, std::to_string(x) + " is out of range [" + std::to_string(min) + ", " +
                  std::to_string(max) + "]");
  }
  return x;
}

double YamlReader::get_double(const std::string& key, double fallback, double min,
                              double max) const {
  const auto found = value(key);
  if (!found) return fallback;
  const YAML::Node& v = *found;
  double x = 0;
  if (!v.IsScalar() || !YAML::convert<double>::decode(v, x) || !std::isfinite(x)) {
    fail(key, "'" + (v.IsScalar() ? v.Scalar() : std::string("<not a scalar>")) +
                  "' is not a finite number");
  }
  if (x < min || x > max) {
    fail(key, v.Scalar() + " is out of range [" + shortest(min) + ", " + shortest(max) + "]");
  }
  return x;
}

bool YamlReader::get_bool(const std::string& key, bool fallback) const {
  const auto found = value(key);
  if (!found) return fallback;
  const YAML::Node& v = *found;
  bool b = false;
  if (!v.IsScalar() || !YAML::convert<bool>::decode(v, b)) {
    fail(key, "'" + (v.IsScalar() ? v.Scalar() : std::string("<not a scalar>")) +
                  "' is not true or false");
  }
  return b;
}

std::vector<int64_t> YamlReader::get_int_list(const std::string& key, int64_t min,
                                              int64_t max) const {
  std::vector<int64_t> out;
  const auto found = value(key);
  if (!found) return out;
  const YAML::Node& v = *found;
  if (!v.IsSequence()) fail(key, "must be a list of integers");
  if (v.size() > kMaxListLength) {
    fail(key, "a list of " + std::to_string(v.size()) + " entries; at most " +
                  std::to_string(kMaxListLength) + " allowed");
  }
  for (std::size_t i = 0; i < v.size(); ++i) {
    int64_t x = 0;
    if (!v[i].IsScalar() || !YAML::convert<int64_t>::decode(v[i], x) || x < min || x > max) {
      fail(key + "[" + std::to_string(i) + "]",
           "must be an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
    }
    out.push_back(x);
  }
  return out;
}

void YamlReader::reject_unknown() const {
  if (!node_.IsMap()) return;
  for (const auto& kv : node_) {
    // A key that is a list or a mapping (`? [a, b]: 1`) is no key of ours (found by fuzz_config).
    const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : std::string("<not a scalar>");
    if (used_.count(key)) continue;
    std::string value = kv.second.IsScalar() ? "'" + kv.second.Scalar() + "'" : "a " +
                        std::string(kv.second.IsMap() ? "mapping" : "list");
    std::string known;
    for (const auto& k : used_) known += (known.empty() ? "" : ", ") + k;
    fail(key, "unknown key (value " + value + "); known keys here: " + known);
  }
}

}  // namespace psrt
