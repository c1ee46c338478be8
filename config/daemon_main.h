// The command line both daemons share: --config, --rank, --set, and the exit-code rules of
// DESIGN.md (configuration and start-up errors: one line on stderr, exit 2; a failed job: 1).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/stop_signals.h"

namespace psrt {

struct DaemonArgs {
  std::string config_path;
  std::vector<std::string> sets;
  int rank = 0;
  bool resume = false;  // --resume: restart from the last common checkpoint
  // SIGTERM, SIGINT, SIGHUP: told to the coordinator; `body` points them at its server or client
  // while they live (StopSignals::Target). Never null in `body`.
  StopSignals* stop = nullptr;
};

// Parses argv, loads the config, sets up logging and BLAS threads, and runs `body`. Returns the
// process exit code.
int daemon_main(int argc, char** argv, const std::string& role,
                const std::function<void(const Config&, const DaemonArgs&)>& body);

}  // namespace psrt
