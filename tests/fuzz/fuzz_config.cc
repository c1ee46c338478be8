// libFuzzer: a config file's text through the YAML parser and every section's validation. Any
// outcome but a Config or a ConfigError (another exception, a crash, a sanitizer report) fails.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/config.h"
#include "core/status.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const psrt::Config c = psrt::parse_config(text, "fuzz.yaml");
    if (c.job.id.empty() || c.cluster.servers < 1 || c.cluster.workers < 1) __builtin_trap();
  } catch (const psrt::ConfigError&) {
  }
  return 0;
}
