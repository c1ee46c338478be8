// Reads a YAML mapping into typed values with errors that name the key, the value and what is
// allowed; reports keys nobody asked for as unknown.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace psrt {

// True when `s` is well-formed UTF-8 (no overlong forms, surrogates or code points past U+10FFFF).
bool valid_utf8(std::string_view s);
// The first control character of `s` (C0 but tab, and DEL), if any: no string psrt reads is
// more than one line, and yaml-cpp's emitter writes a carriage return as it is, which reads back
// as a line break (fuzz_model: a layer named "\r" came back from profile_yaml without a name).
std::optional<char> control_character(std::string_view s);
// "holds the control character 0x0d" for the first of them, if any (for error messages).
std::optional<std::string> control_character_error(std::string_view s);
// The text of a YAML file the user names (`what`: "a model profile (model.profile, --profile)"):
// throws ConfigError naming the path when it is missing, not a regular file (a folder read as a
// file gave "basic_filebuf::underflow error", without the path; /dev/zero read for ever) or over
// `max_bytes`.
std::string read_yaml_file(const std::string& path, const std::string& what, uint64_t max_bytes);

class YamlReader {
 public:
  static constexpr std::size_t kMaxStringBytes = 4096;  // any string value (paths included)
  static constexpr std::size_t kMaxListLength = 4096;   // any list
  // `path` is the dotted prefix used in messages ("scheduler"); `where` names the file.
  YamlReader(YAML::Node node, std::string path, std::string where);

  bool has(const std::string& key) const;
  void mark_used(const std::string& key) const { used_.insert(key); }
  YamlReader child(const std::string& key) const;  // an absent child reads as an empty mapping

  std::string get_string(const std::string& key, const std::string& fallback) const;
  std::string get_choice(const std::string& key, const std::string& fallback,
                         const std::vector<std::string>& allowed) const;
  int64_t get_int(const std::string& key, int64_t fallback, int64_t min, int64_t max) const;
  double get_double(const std::string& key, double fallback, double min, double max) const;
  bool get_bool(const std::string& key, bool fallback) const;
  std::vector<int64_t> get_int_list(const std::string& key, int64_t min, int64_t max) const;

  // Throws ConfigError naming the first key of this mapping that was never read.
  void reject_unknown() const;

  const YAML::Node& node() const { return node_; }
  const std::string& where() const { return where_; }
  std::string full(const std::string& key) const;
  [[noreturn]] void fail(const std::string& key, const std::string& what) const;

 private:
  const YAML::Node* find(const std::string& key) const;
  // The key's value, marked as read; an empty node when absent; a ConfigError when present
  // without a value (`key:` or `--set key=`).
  std::optional<YAML::Node> value(const std::string& key) const;

  YAML::Node node_;
  std::string path_;
  std::string where_;
  mutable std::set<std::string> used_;
};

}  // namespace psrt
