// The job file as the daemons and psrt-launch read it, with the environment's overrides.
#pragma once

#include <string>
#include <vector>

#include "core/config.h"

namespace psrt {

// load_config with the environment's cluster.* overrides (core/endpoints.h: PSRT_COORDINATOR,
// PSRT_BIND_HOST, PSRT_ADVERTISE_HOST) before `sets`. An error about a key that a variable set
// names the variable (it was blamed on a --set that appears in no script).
Config load_config_with_env(const std::string& path, const std::vector<std::string>& sets);

}  // namespace psrt
