// Killing one process of a running job (2 servers, 2 workers, replay backend) makes every other
// process exit with an error naming the lost peer, within the configured peer timeout (checked
// against a generous deadline: behaviour, not timing). Stopping one with a signal ends the job
// naming it, whatever the peer timeout.
#include <catch2/catch.hpp>
#include <signal.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tests/integration/proc_util.h"

using namespace psrt;
using namespace psrt::test;

namespace {

constexpr double kPeerTimeout = 1.5;
constexpr double kDeadline = kPeerTimeout + 15;

std::string job_yaml(double peer_timeout) {
  return "job: {id: lost, iterations: 1000000, log_every: 0}\n"
         "cluster: {servers: 2, workers: 2, start_timeout_s: 60, heartbeat_s: 0.2, "
         "peer_timeout_s: " + std::to_string(peer_timeout) + "}\n"
         "model: {backend: replay, profile: '" +
         source("tests/integration/data/tiny_profile.yaml") +
         "'}\n"
         "optimizer: {type: sgd, lr: 0.01}\n"
         "scheduler: {mode: preemptive, chunk_bytes: 4096}\n";
}

struct Cluster {
  std::vector<std::unique_ptr<Proc>> procs;  // server 0, server 1, worker 0, worker 1
  std::vector<std::string> names;

  explicit Cluster(double peer_timeout = kPeerTimeout) {
    const std::string dir = temp_dir("lost");
    const std::string cfg = dir + "/job.yaml";
    write_file(cfg, job_yaml(peer_timeout));
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

  // Sends `sig` to process `victim`, whose peers wait out a peer timeout far longer than the
  // deadline: every process, the victim too, must end with the job's failure naming `stopped`.
  // (The victim itself says only why it stops.)
  void stop_and_check(std::size_t victim, int sig, const std::string& signal,
                      const std::string& stopped) {
    procs[victim]->kill(sig);
    for (std::size_t i = 0; i < procs.size(); ++i) {
      const auto rc = procs[i]->wait_exit(kDeadline);
      INFO(names[i] << " output:\n" << procs[i]->output());
      REQUIRE(rc.has_value());  // else it is still running past the deadline
      CHECK(*rc == 1);
      CHECK_THAT(procs[i]->output(),
                 Catch::Contains(i == victim ? "stopped by " + signal : stopped));
      CHECK_THAT(procs[i]->output(), Catch::Contains("job failed"));
      CHECK_THAT(procs[i]->output(), !Catch::Contains("lost"));
    }
  }
};

// Far beyond kDeadline: a stop told to the job cannot be mistaken for a silence found.
constexpr double kLongPeerTimeout = 600;

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

// A daemon told to stop tells its job why (core/stop_signals.h): the others end at once, naming
// it and the signal, where they waited out cluster.peer_timeout_s before.
TEST_CASE("a worker sent SIGTERM ends the job naming it", "[integration][lost]") {
  Cluster c(kLongPeerTimeout);
  c.stop_and_check(3, SIGTERM, "SIGTERM", "worker 1 gave up: stopped by SIGTERM");
}

TEST_CASE("a server sent SIGHUP ends the job naming it", "[integration][lost]") {
  Cluster c(kLongPeerTimeout);
  c.stop_and_check(1, SIGHUP, "SIGHUP", "server 1 gave up: stopped by SIGHUP");
}

TEST_CASE("a coordinator sent SIGTERM ends the job naming it", "[integration][lost]") {
  Cluster c(kLongPeerTimeout);
  c.stop_and_check(0, SIGTERM, "SIGTERM", "server 0 gave up: stopped by SIGTERM");
}

// Server 0 stopped while it waited for registrations: it opened the window that tells latecomers
// why the job ended (up to 10 s), outlasted the signal's 3 s grace and died by the signal.
TEST_CASE("a coordinator stopped before everyone registered exits at once as the job's failure",
          "[integration][lost]") {
  const std::string dir = temp_dir("lost");
  const std::string cfg = dir + "/job.yaml";
  write_file(cfg, job_yaml(kLongPeerTimeout));
  Proc server("server 0", {bin("psrt-server"), "--config", cfg, "--set",
                           "cluster.coordinator=tcp://127.0.0.1:0"});
  REQUIRE(server.wait_line("PSRT_LISTENING ", 30));
  server.kill(SIGTERM);
  const auto rc = server.wait_exit(kDeadline);
  INFO(server.output());
  CHECK(rc == std::optional<int>(1));
  CHECK_THAT(server.output(), Catch::Contains("server 0 gave up: stopped by SIGTERM"));
  CHECK_THAT(server.output(), !Catch::Contains("still running"));
}
