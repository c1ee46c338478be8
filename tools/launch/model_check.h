// psrt-launch's check of the job's model before anything starts: the native network is built
// once (a shape that does not fit, e.g. a custom layer list whose kernel outgrows its input, is
// reported here, not by every worker after the servers are up), a replay profile is loaded, and
// a model-parallel split is laid out on it (more stages than layers, or a plan file that does not
// fit the model). Throws ConfigError. `read_files` false (--check, which cluster scripts run where
// the job's files may not be: a Kubernetes job's profile lives in its image) checks only what
// the config itself holds: a native network, laid out without a plan file; it refuses
// placement.plan: auto, which only psrt-launch running the job resolves. A plan file made for
// another batch size or micro-batch count is warned about.
#pragma once

#include "core/config.h"

namespace psrt::launch {

void check_model(const Config& config, bool read_files);

}  // namespace psrt::launch
