// psrt-placer: the placement service. Answers PLACE_REQUEST messages (a model graph, devices,
// options) with a plan from NetPlacer or a named baseline, or with an ERROR that says what was
// wrong, and carries on. Prints "PSRT_LISTENING <endpoint>" once bound (for psrt-launch and tests).
//
//   psrt-placer [--bind tcp://127.0.0.1:0] [--job-id psrt] [--log-level info] [--max-search-s 60]
#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <iostream>
#include <zmq.hpp>

#include "core/cli.h"
#include "core/endpoint_form.h"
#include "core/logging.h"
#include "placement/service/placer_service.h"

int main(int argc, char** argv) {
  CLI::App app{"psrt-placer: the NetPlacer placement service"};
  std::string bind = "tcp://127.0.0.1:0", job_id = "psrt", level = "info";
  app.add_option("--bind", bind, "endpoint to bind (port 0: OS-chosen)")
      ->check([](const std::string& e) {  // ZeroMQ took port 99999 as 99999 mod 65536
        std::string host;
        int port = 0;
        return psrt::split_tcp_endpoint(e, host, port)
                   ? std::string()
                   : "'" + e + "' is not tcp://HOST:PORT with a port from 0 to 65535";
      });
  app.add_option("--job-id", job_id, "job id requests must carry");
  app.add_option("--log-level", level, "trace, debug, info, warn, error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}));
  double max_search_s = psrt::placement::PlacerService::kDefaultMaxSearchS;
  app.add_option("--max-search-s", max_search_s,
                 "the searching placers (annealing, exhaustive) answer an error past this many "
                 "seconds (0: no limit)")
      ->check(psrt::finite_in(0, 86400));
  if (const auto rc = psrt::parse_command_line(app, argc, argv, "psrt-placer")) return *rc;
  spdlog::set_level(spdlog::level::from_str(level));
  psrt::route_protobuf_logs();
  try {
    psrt::placement::PlacerService service(bind, job_id, max_search_s);
    std::printf("PSRT_LISTENING %s\n", service.endpoint().c_str());
    std::fflush(stdout);
    service.run();
  } catch (const zmq::error_t& e) {
    std::cerr << "psrt-placer: cannot bind --bind " << bind << ": " << e.what()
              << " (the form is tcp://HOST:PORT, port 0 for any)\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "psrt-placer: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
