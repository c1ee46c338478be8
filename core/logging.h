// Logging set-up: spdlog's default logger, lines prefixed with the process's role and rank.
#pragma once

#include <string>

namespace psrt {

void init_logging(const std::string& role, int rank, const std::string& level);

}  // namespace psrt
