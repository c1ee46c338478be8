// NetPlacer: splits a model graph over devices by balancing compute, communication and
// parameter (memory) load, with memory as a hard limit and the bytes cut as the second objective,
// from closed-form cost models (placement/cost_model.h for the stage balance that generates
// candidates, placement/pipeline_model.h for the plan price that chooses among them) and never
// a simulation. See README.md.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "placement/placer.h"

namespace psrt::placement {

// The layer-to-device map, or an error naming the device and the bytes missing when no split of
// the graph fits the devices' memory.
Result<std::vector<uint32_t>> netplacer(const Problem& problem);

}  // namespace psrt::placement
