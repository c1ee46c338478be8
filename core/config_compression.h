// The `compression:` section of the job configuration (core/config.h has the struct).
#pragma once

#include "core/config.h"
#include "core/yaml_reader.h"

namespace psrt {

// Reads `compression:` into `c`. Momentum and Adam correction move the optimizer's momentum,
// betas, eps and weight decay from `optimizer` to the workers (`c`), leaving the servers plain
// SGD; `cluster.workers` is Adam's global batch in replicas.
void parse_compression(const YamlReader& comp, const ClusterConfig& cluster,
                       OptimizerConfig& optimizer, CompressionConfig& c);

}  // namespace psrt
