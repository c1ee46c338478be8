// Logging set-up: spdlog's default logger, lines prefixed with the process's role and rank.
#pragma once

#include <string>

namespace psrt {

void init_logging(const std::string& role, int rank, const std::string& level);

// libprotobuf prints a line of its own for every message it refuses to parse (a string that is
// not UTF-8, say): a peer could flood the log. The daemons report such messages themselves, counted
// and rate-limited, so libprotobuf's lines go to spdlog at debug level (fatal ones stay critical).
// init_logging calls it; processes without it call it at start.
void route_protobuf_logs();

}  // namespace psrt
