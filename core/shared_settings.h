// The settings every process of a job must share, as "key=value" lines in a fixed order. Each
// server and worker registers its own, and server 0 refuses a process whose lines differ from
// those registered before it: a job file or a --set that differed on one host trained half the
// model with another optimizer, or a worker with another batch size or worker count, silently.
// Per-host keys (data.path, timelines, threads, addresses, limits) and what worker 0 decides for
// every worker (scheduler.grouping) are not among them.
#pragma once

#include <string>
#include <vector>

#include "core/config.h"

namespace psrt {

std::vector<std::string> shared_settings(const Config& config);

// The first line where `theirs` and `mine` differ, as "KEY is A for THEY, B for ME", or "" when
// they agree (or either is empty: a process that says none).
std::string settings_difference(const std::vector<std::string>& theirs, const std::string& they,
                                const std::vector<std::string>& mine, const std::string& me);

}  // namespace psrt
