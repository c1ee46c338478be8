// psrt-sim --placement plan.yaml: prices a model-parallel plan (pipeline simulator) and prints the
// step time, each device's compute and memory, and whether the plan fits.
#pragma once

#include <string>

#include "core/model.h"
#include "scheduler/sim/pipeline.h"

namespace psrt::tools {

// Throws ConfigError for a bad plan file, std::invalid_argument for a plan that does not match.
// Returns the process exit code: 0, or 1 when a device is over its memory.
int simulate_plan(const ModelDesc& model, const std::string& plan_path,
                  const sim::PipelineOptions& options);

}  // namespace psrt::tools
