// psrt-launch's placement step for `placement.plan: auto`: starts psrt-placer (unless
// placement.address names a running one), has psrt-place ask it for the job's plan, stops the
// placer it started, and returns the plan file's path for placement.plan in every process.
#pragma once

#include <string>
#include <vector>

#include "core/config.h"

namespace psrt::launch {

// Throws JobError naming the step that failed (the placer did not start, no plan fits);
// ConfigError for a TMPDIR it cannot write the plan in, before it starts anything.
std::string make_plan(const Config& config, const std::string& config_path,
                      const std::vector<std::string>& sets, const std::string& bin_dir);
// With placement.mode model | hybrid: throws ConfigError naming placement.partitions when the
// plan at `plan` has another number of stages (the placer may use fewer devices than it has).
void check_plan_stages(const Config& config, const std::string& plan);

}  // namespace psrt::launch
