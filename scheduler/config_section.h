// The `scheduler:` section of the job configuration, parsed and validated by the module that
// owns it (the struct: core/config.h's SchedulerConfig; composed with the other sections by
// config/job_config.h).
#pragma once

#include "core/config_sections.h"

namespace psrt {

// Reads `scheduler:` into `c`; `in_base` resolves the calibration file's path.
void parse_scheduler_section(const YamlReader& sch, const ConfigPath& in_base,
                             SchedulerConfig& c);

}  // namespace psrt
