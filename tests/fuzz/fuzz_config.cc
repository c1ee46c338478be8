// libFuzzer: a config file's text through the YAML parser and every section's validation, with
// the command line's --set overrides. Any outcome but a Config or a ConfigError (another
// exception, a crash, a sanitizer report) fails.
//
// Input: leading lines that start with "--set " are overrides (the rest of the line is the
// argument); everything after them is the file.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "config/job_config.h"
#include "core/config.h"
#include "core/status.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> sets;
  while (text.rfind("--set ", 0) == 0) {
    const auto nl = text.find('\n');
    sets.push_back(text.substr(6, nl == std::string::npos ? std::string::npos : nl - 6));
    text = nl == std::string::npos ? std::string() : text.substr(nl + 1);
  }
  try {
    const psrt::Config c = psrt::parse_config(text, "fuzz.yaml", sets);
    if (c.job.id.empty() || c.cluster.servers < 1 || c.cluster.workers < 1) __builtin_trap();
  } catch (const psrt::ConfigError&) {
  }
  return 0;
}
