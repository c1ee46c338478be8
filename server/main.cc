// psrt-server: holds a shard of the parameters, aggregates the workers' gradients, runs the
// optimizer. Server 0 is also the coordinator.
#include <cstdio>

#include "config/daemon_main.h"
#include "core/stop_signals.h"
#include "server/server.h"

int main(int argc, char** argv) {
  return psrt::daemon_main(argc, argv, "server", [](const psrt::Config& config,
                                                    const psrt::DaemonArgs& args) {
    psrt::Server server(config, static_cast<uint32_t>(args.rank));
    // SIGTERM, SIGINT, SIGHUP: the job is told which server stopped (core/stop_signals.h).
    psrt::StopSignals::Target stop(*args.stop, [&server](const std::string& sig) {
      return server.request_stop("stopped by " + sig);
    });
    // Machine-readable, for psrt-launch and tests that bound port 0.
    std::printf("PSRT_LISTENING %s\n", server.endpoint().c_str());
    std::fflush(stdout);
    psrt::StopSignals::block_in_this_thread();  // this thread runs the server's I/O loop
    server.run();
  });
}
