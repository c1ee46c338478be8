// Shared by the configuration tests.
#pragma once

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "config/job_config.h"
#include "core/status.h"

namespace psrt::test {

// The ConfigError message parse_config throws for `yaml` (with `sets`); fails the test if none.
inline std::string error_of(const std::string& yaml, const std::vector<std::string>& sets = {}) {
  try {
    (void)parse_config(yaml, "job.yaml", sets);
  } catch (const ConfigError& e) {
    return e.what();
  }
  FAIL("no ConfigError for: " << yaml);
  return {};
}

}  // namespace psrt::test
