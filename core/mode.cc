#include "core/mode.h"

namespace psrt {

namespace {
struct Entry {
  Mode mode;
  const char* name;
};
constexpr Entry kModes[] = {{Mode::kBigdl, "bigdl"},
                            {Mode::kFifo, "fifo"},
                            {Mode::kFifoChunked, "fifo_chunked"},
                            {Mode::kNonpreemptive, "nonpreemptive"},
                            {Mode::kPreemptive, "preemptive"}};
}  // namespace

const char* mode_name(Mode m) {
  for (const auto& e : kModes)
    if (e.mode == m) return e.name;
  return "?";
}

std::optional<Mode> parse_mode(const std::string& name) {
  for (const auto& e : kModes)
    if (name == e.name) return e.mode;
  return std::nullopt;
}

const std::vector<std::string>& mode_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& e : kModes) v.emplace_back(e.name);
    return v;
  }();
  return names;
}

}  // namespace psrt
