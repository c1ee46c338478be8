// The `compression:` section of the job configuration, parsed and validated by the module that
// owns it (the struct: core/compression_config.h, compress::CodecConfig; composed with the other
// sections by config/job_config.h).
#pragma once

#include "core/config_sections.h"

namespace psrt::compress {

// Reads `compression:` into `c`. Momentum and Adam correction move the optimizer's momentum,
// betas, eps and weight decay from `optimizer` to the workers (`c`), leaving the servers plain
// SGD. `replicas`: the data-parallel replicas (cluster.workers / placement.partitions), one
// pusher of each tensor per replica: Adam's global batch, and the replies' default density.
void parse_compression_section(const YamlReader& comp, int replicas, OptimizerConfig& optimizer,
                               CompressionConfig& c);

}  // namespace psrt::compress
