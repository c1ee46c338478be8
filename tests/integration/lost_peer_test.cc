// Killing one process of a running job (2 servers, 2 workers, replay backend) makes every other
// process exit with an error naming the lost peer, within the configured peer timeout (checked
// against a generous deadline: behaviour, not timing).
#include <catch2/catch.hpp>
#include <signal.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/integration/proc_util.h"

using namespace psrt;
using namespace psrt::test;

namespace {

constexpr double kPeerTimeout = 1.5;
constexpr double kDeadline = kPeerTimeout + 15;

std::string job_yaml() {
  return "job: {id: lost, iterations: 1000000, log_every: 0}\n"
         "cluster: {servers: 2, workers: 2, start_timeout_s: 60, heartbeat_s: 0.2, "
         "peer_timeout_s: 1.5}\n"
         "model: {backend: replay, profile: '" +
         source("tests/integration/data/tiny_profile.yaml") +
         "'}\n"
         "optimizer: {type: sgd, lr: 0.01}\n"
         "scheduler: {mode: preemptive, chunk_bytes: 4096}\n";
}

struct Cluster {
  std::vector<std::unique_ptr<Proc>> procs;  // server 0, server 1, worker 0, worker 1
  std::vector<std::string> names;

  Cluster() {
    const std::string dir = temp_dir("lost");
    const std::string cfg = dir + "/job.yaml";
    write_file(cfg, job_yaml());
    Daemons d = start_daemons(cfg, 2, 2);
    INFO(d.procs[0]->output());
    REQUIRE(d.started);
    procs = std::move(d.procs);
    names = std::move(d.names);
  }

  // Kills process `victim`; every other one must exit non-zero, naming `lost` in its output.
  void kill_and_check(std::size_t victim, const std::string& lost) {
    procs[victim]->kill(SIGKILL);
    REQUIRE(procs[victim]->wait_exit(10) == 128 + SIGKILL);
    for (std::size_t i = 0; i < procs.size(); ++i) {
      if (i == victim) continue;
      const auto rc = procs[i]->wait_exit(kDeadline);
      INFO(names[i] << " output:\n" << procs[i]->output());
      REQUIRE(rc.has_value());  // else it is still running past the deadline
      CHECK(*rc == 1);
      CHECK_THAT(procs[i]->output(), Catch::Contains(lost));
      CHECK_THAT(procs[i]->output(), Catch::Contains("job failed"));
    }
  }
};

}  // namespace

TEST_CASE("a killed worker makes every other process exit naming it", "[integration][lost]") {
  Cluster c;
  c.kill_and_check(3, "worker 1");
}

TEST_CASE("a killed server makes every other process exit naming it", "[integration][lost]") {
  Cluster c;
  c.kill_and_check(1, "server 1");
}

TEST_CASE("a killed coordinator makes every other process exit naming it", "[integration][lost]") {
  Cluster c;
  c.kill_and_check(0, "server 0");
}
