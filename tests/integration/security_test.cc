// Issue 17, rows 1 and 6, and the progress watchdog, with real processes on loopback: a foreign
// process posing as a worker can neither stall nor read a job, a second process with a taken rank
// or another job id is refused (exit 2) while the job completes, a stopped and resumed coordinator
// does not blame a healthy server, and a worker that heartbeats but never pushes is named.
#include <catch2/catch.hpp>
#include <signal.h>

#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "tests/integration/raw_client.h"

using namespace psrt;
using namespace psrt::test;

namespace {

std::string job_yaml(int iterations, double peer_timeout, const std::string& cluster_extra,
                     uint64_t credit) {
  return "job: {id: sec, iterations: " + std::to_string(iterations) + ", log_every: 0}\n" +
         "cluster: {servers: 2, workers: 2, start_timeout_s: 60, heartbeat_s: 0.2, "
         "peer_timeout_s: " +
         std::to_string(peer_timeout) + cluster_extra + "}\n" +
         "model: {backend: replay, profile: '" +
         source("tests/integration/data/tiny_profile.yaml") +
         "'}\n"
         "optimizer: {type: sgd, lr: 0.01}\n"
         "scheduler: {mode: preemptive, chunk_bytes: 4096, credit_bytes: " +
         std::to_string(credit) + "}\n";
}

std::string listening(Proc& p) {
  INFO(p.output());
  REQUIRE(p.wait_line("PSRT_LISTENING ", 30));
  const std::string& out = p.output();
  const auto at = out.find("PSRT_LISTENING ") + 15;
  return out.substr(at, out.find('\n', at) - at);
}

// Server 0, server 1, worker 0, worker 1 of one job, started until the start barrier passed.
struct Job {
  std::string cfg;
  std::string coordinator;
  std::string server1;
  std::vector<std::unique_ptr<Proc>> procs;

  Job(int iterations, double peer_timeout, const std::string& cluster_extra = "",
      uint64_t credit = 4 << 20) {
    cfg = temp_dir("sec") + "/job.yaml";
    write_file(cfg, job_yaml(iterations, peer_timeout, cluster_extra, credit));
    procs.push_back(start("psrt-server", 0, "cluster.coordinator=tcp://127.0.0.1:0"));
    coordinator = listening(*procs[0]);
    procs.push_back(start("psrt-server", 1));
    server1 = listening(*procs[1]);
    procs.push_back(start("psrt-worker", 0));
    procs.push_back(start("psrt-worker", 1));
    INFO(procs[0]->output());
    REQUIRE(procs[0]->wait_line("start barrier passed", 30));
  }

  std::unique_ptr<Proc> start(const std::string& program, int rank, std::string set = "",
                              const std::vector<std::string>& more = {}) {
    if (set.empty()) set = "cluster.coordinator=" + coordinator;
    std::vector<std::string> argv{bin(program), "--config", cfg, "--rank", std::to_string(rank),
                                  "--set", set};
    argv.insert(argv.end(), more.begin(), more.end());
    return std::make_unique<Proc>(program + " " + std::to_string(rank), argv);
  }

  void expect_success() {
    for (auto& p : procs) {
      const auto rc = p->wait_exit(60);
      INFO(p->output());
      CHECK(rc == 0);
    }
  }
};

const Sender kW1{wire::WORKER, 1, "sec"};

}  // namespace

TEST_CASE("a foreign process posing as worker 1 neither stalls nor reads the job",
          "[integration][security]") {
  Job job(500, 10);
  zmq::context_t ctx(1);
  // Routing id "w1", as the attacker: the real worker 1 registered under another one.
  RawClient on_server1(ctx, job.server1, "w1", kW1);
  // Any chunk of tensor 0 (3000 elements, chunk 1024 floats at 4096 bytes).
  on_server1.send(on_server1.tensor(wire::PULL, 0, 0, 1024, 0));
  CHECK_THAT(expect_error(on_server1, ErrorCode::kNotRegistered), Catch::Contains("worker 1"));
  std::vector<float> nan(1024, std::numeric_limits<float>::quiet_NaN());
  on_server1.send(on_server1.tensor(wire::PUSH, 0, 0, 1024, 0, &nan), RawClient::frame_of(nan));
  expect_error(on_server1, ErrorCode::kNotRegistered);

  RawClient on_server0(ctx, job.coordinator, "w1", kW1);
  on_server0.send(on_server0.header(wire::HEARTBEAT));  // a forged heartbeat
  CHECK_THAT(expect_error(on_server0, ErrorCode::kNotRegistered),
             Catch::Contains("over this connection"));
  wire::Header reg = on_server0.header(wire::REGISTER);
  auto* t = reg.mutable_register_()->add_tensors();
  t->set_key(0);
  t->set_num_elements(3000);
  on_server0.send(reg);
  CHECK_THAT(expect_error(on_server0, ErrorCode::kTaken), Catch::Contains("already registered"));
  // Nor can anyone speak as the coordinator itself, e.g. to abort the job.
  RawClient as_s0(ctx, job.coordinator, "s0", {wire::SERVER, 0, "sec"});
  wire::Header abort = as_s0.header(wire::ABORT);
  abort.mutable_error()->set_message("forged");
  as_s0.send(abort);
  expect_error(as_s0, ErrorCode::kNotRegistered);
  job.expect_success();
}

TEST_CASE("a second worker with a taken rank or another job id is refused and the job completes",
          "[integration][security]") {
  Job job(500, 10);
  auto twin = job.start("psrt-worker", 1);
  auto stranger = job.start("psrt-worker", 0, "job.id=otherjob",
                            {"--set", "cluster.coordinator=" + job.coordinator});
  {
    const auto rc = twin->wait_exit(30);
    INFO(twin->output());
    CHECK(rc == 2);
    CHECK_THAT(twin->output(), Catch::Contains("worker 1 is already registered"));
  }
  {
    const auto rc = stranger->wait_exit(30);
    INFO(stranger->output());
    CHECK(rc == 2);
    CHECK_THAT(stranger->output(), Catch::Contains("serves another job"));
    CHECK_THAT(stranger->output(), !Catch::Contains("'sec'"));
  }
  job.expect_success();
}

TEST_CASE("a coordinator stopped and resumed does not blame a healthy server",
          "[integration][security]") {
  Job job(1000000, 1.5);
  job.procs[0]->kill(SIGSTOP);
  // The others give up on the coordinator (a stop longer than the peer timeout) ...
  for (std::size_t i = 1; i < job.procs.size(); ++i) {
    const auto rc = job.procs[i]->wait_exit(30);
    INFO(job.procs[i]->output());
    REQUIRE(rc == 1);
    CHECK_THAT(job.procs[i]->output(), Catch::Contains("lost the coordinator"));
  }
  // ... and once resumed, it ends the job with their reason, not "server 1 lost".
  job.procs[0]->kill(SIGCONT);
  const auto rc = job.procs[0]->wait_exit(30);
  INFO(job.procs[0]->output());
  CHECK(rc == 1);
  CHECK_THAT(job.procs[0]->output(), !Catch::Contains("server 1 lost"));
  CHECK_THAT(job.procs[0]->output(), Catch::Contains("gave up: lost the coordinator"));
}

namespace {
// Worker 0 pushes tensor 0 of a one-server job; worker 1 heartbeats, saying it waits for the
// parameters of server `w1_waits_for` (1 + rank; 0: nothing), and never pushes.
std::string stalled_by_worker_1(uint32_t w1_waits_for) {
  ServerProc s(
      "job: {id: watch, iterations: 1}\n"
      "cluster: {servers: 1, workers: 2, heartbeat_s: 0.1, peer_timeout_s: 60, "
      "progress_timeout_s: 1}\n"
      "optimizer: {type: sgd, lr: 0.5, momentum: 0}\n");
  zmq::context_t ctx(1);
  RawClient w0(ctx, s.endpoint, "w0", {wire::WORKER, 0, "watch"});
  RawClient w1(ctx, s.endpoint, "w1", {wire::WORKER, 1, "watch"});
  for (RawClient* w : {&w0, &w1}) {
    wire::Header reg = w->header(wire::REGISTER);
    auto* t = reg.mutable_register_()->add_tensors();
    t->set_key(0);
    t->set_num_elements(10);
    w->send(reg);
  }
  expect(w0, wire::MEMBERSHIP);
  expect(w1, wire::MEMBERSHIP);
  const std::vector<float> values(10, 0.25f);
  w0.send(w0.tensor(wire::INIT, 0, 0, 10, 0, &values), RawClient::frame_of(values));
  expect(w0, wire::ACK);
  for (RawClient* w : {&w0, &w1}) {
    wire::Header b = w->header(wire::BARRIER);
    b.mutable_barrier()->set_name("start");
    w->send(b);
  }
  expect(w0, wire::BARRIER_RELEASE);
  expect(w1, wire::BARRIER_RELEASE);
  w0.send(w0.tensor(wire::PUSH, 0, 0, 10, 0, &values), RawClient::frame_of(values));
  expect(w0, wire::ACK);
  // Worker 1 stays alive (heartbeats) but never pushes: the stalled link heartbeats cannot see.
  std::optional<int> rc;
  for (int i = 0; i < 150 && !rc; ++i) {  // the watchdog fires after 1 s; 30 s at most
    wire::Header hb = w1.header(wire::HEARTBEAT);
    hb.set_waits_for_server(w1_waits_for);
    w1.send(hb);
    (void)w1.recv(0.1);
    rc = s.proc->wait_exit(0.1);
  }
  INFO(s.proc->output());
  REQUIRE(rc);
  CHECK(*rc == 1);
  return s.proc->output();
}
}  // namespace

TEST_CASE("a worker that heartbeats but never pushes is named by the progress watchdog",
          "[integration][security]") {
  const std::string out = stalled_by_worker_1(0);
  CHECK_THAT(out, Catch::Contains("no training progress"));
  CHECK_THAT(out, Catch::Contains("waits for the push of worker 1 for tensor 0"));
  CHECK_THAT(out, !Catch::Contains("waits for parameters from this server"));
}

TEST_CASE("a server and a worker that wait for each other are both named",
          "[integration][security]") {
  // Worker 1 says it waits for server 0, the very server that waits for its push: a cycle, which
  // the server reports at once rather than leaving it to the worker. A claim about a server
  // outside the job (rank 5 of 1) is no claim: the server reports as for a silent worker.
  const std::string out = stalled_by_worker_1(1);
  CHECK_THAT(out, Catch::Contains("waits for the push of worker 1 for tensor 0"));
  CHECK_THAT(out, Catch::Contains("and worker 1 waits for parameters from this server"));
  CHECK_THAT(stalled_by_worker_1(6), Catch::Contains("waits for the push of worker 1"));
}

TEST_CASE("a worker that waits for a server that never answers names it",
          "[integration][security]") {
  // Ample credit: the pushes to server 0 are not held up behind server 1's, so server 0 waits for
  // nobody and the workers, who know whom they wait for, report. 3 s: at 1 s a worker descheduled
  // that long on a loaded machine (a CI run) stalled server 0 first, which was then named.
  Job job(1000000, 60, ", progress_timeout_s: 3", 1 << 20);
  job.procs[1]->kill(SIGSTOP);  // server 1 hangs; its heartbeats stop, but the peer timeout is long
  const auto rc = job.procs[0]->wait_exit(30);
  INFO(job.procs[0]->output());
  CHECK(rc == 1);
  CHECK_THAT(job.procs[0]->output(), Catch::Contains("gave up: no training progress"));
  CHECK_THAT(job.procs[0]->output(), Catch::Contains("waits for parameters from server 1"));
  for (std::size_t w : {2u, 3u}) {
    INFO(job.procs[w]->output());
    CHECK(job.procs[w]->wait_exit(30) == 1);
  }
  job.procs[1]->kill(SIGKILL);
}
