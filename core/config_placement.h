// The `placement:` section of the job configuration (core/config.h has the struct): where a
// model-parallel plan comes from, its devices, and the split modes with the combinations that run.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/yaml_reader.h"

namespace psrt {

// The names placement.placer takes: placement/placer.h's registry (a test keeps them equal; the
// configuration sits below the placers and cannot ask them).
const std::vector<std::string>& placer_choices();
// Reads `placement:`; `resolve` turns a path in the file into a usable one.
PlacementConfig parse_placement(const YamlReader& r,
                                const std::function<std::string(const std::string&)>& resolve);
// Refuses (naming the key) the combinations of placement.mode, partitions, micro_batches and the
// rest of `c` that cannot run; `r` is the placement section.
void check_split(const Config& c, const YamlReader& r);

}  // namespace psrt
