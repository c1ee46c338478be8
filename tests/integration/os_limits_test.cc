// What the operating system does to a job: a low open-file limit, output nobody reads, an
// address with no port. Each was a crash, a silent death or a wait that explained nothing.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/integration/proc_util.h"

using namespace psrt;

namespace {

// A job of one server and one worker: `job_keys` of job:, its model, and `extra` sections.
std::string write_job(const std::string& dir, const std::string& job_keys,
                      const std::string& model, const std::string& extra = "") {
  const std::string cfg = dir + "/job.yaml";
  test::write_file(cfg, "job: {id: oslimits, " + job_keys +
                            "}\n"
                            "cluster: {servers: 1, workers: 1, heartbeat_s: 0.2}\n"
                            "model: " +
                            model + "\n" + extra);
  return cfg;
}

std::string tiny_replay() {
  return "{backend: replay, profile: " +
         test::source("tests/integration/data/tiny_profile.yaml") + "}";
}

std::string job(const std::string& dir, int iterations, const std::string& extra = "") {
  return write_job(dir, "iterations: " + std::to_string(iterations) + ", log_every: 0",
                   tiny_replay(), extra);
}

// `command` run by bash (with pipefail: a pipeline's status is its first failure's).
test::Proc bash(const std::string& command) {
  return test::Proc("bash", {"/bin/bash", "-c", "set -o pipefail; " + command});
}

}  // namespace

TEST_CASE("below the open-file limit a job needs, psrt-launch and the daemons refuse to start",
          "[integration]") {
  const std::string cfg = job(test::temp_dir("oslimits"), 3);
  // psrt-launch ended in std::terminate ("pipe: Too many open files"); a coordinator dropped
  // its workers' connections without a word and blamed one of them.
  auto launch = bash("ulimit -n 12; exec " + test::bin("psrt-launch") + " " + cfg);
  CHECK(launch.wait_exit(60) == 2);
  CHECK_THAT(launch.output(), Catch::Contains("the open-file limit is 12"));
  CHECK_THAT(launch.output(), !Catch::Contains("terminate"));
  auto server = bash("ulimit -n 14; exec " + test::bin("psrt-server") + " --config " + cfg);
  CHECK(server.wait_exit(60) == 2);
  CHECK_THAT(server.output(), Catch::Contains("the open-file limit is 14"));
}

TEST_CASE("a coordinator address without a usable port is refused at start", "[integration]") {
  const std::string cfg = job(test::temp_dir("oslimits"), 3);
  // "internal error: Invalid argument" (ZeroMQ's connect), exit 1.
  test::Proc no_port("worker", {test::bin("psrt-worker"), "--config", cfg, "--set",
                                "cluster.coordinator=tcp://127.0.0.1"});
  CHECK(no_port.wait_exit(30) == 2);
  CHECK_THAT(no_port.output(), Catch::Contains("must be a tcp://HOST:PORT endpoint"));
  // Port 0 is server 0's to choose: the others waited out cluster.start_timeout_s.
  test::Proc zero("worker", {test::bin("psrt-worker"), "--config", cfg, "--set",
                             "cluster.coordinator=tcp://127.0.0.1:0"});
  CHECK(zero.wait_exit(30) == 2);
  CHECK_THAT(zero.output(), Catch::Contains("port 0 lets server 0 take a free port"));
}

TEST_CASE("a daemon whose output nobody reads still finishes its job", "[integration]") {
  const std::string cfg = job(test::temp_dir("oslimits"), 20);
  test::Proc server("server", {test::bin("psrt-server"), "--config", cfg, "--set",
                               "cluster.coordinator=tcp://127.0.0.1:0"});
  REQUIRE(server.wait_line("PSRT_LISTENING ", 30));
  const std::string& out = server.output();
  const auto at = out.find("PSRT_LISTENING ") + 15;
  const std::string endpoint = out.substr(at, out.find('\n', at) - at);
  // `true` reads nothing and exits: every line the worker prints meets a closed pipe, and
  // SIGPIPE ended it silently (exit 141) when it printed its result.
  auto worker = bash(test::bin("psrt-worker") + " --config " + cfg +
                     " --set cluster.coordinator=" + endpoint + " 2>&1 | true");
  CHECK(worker.wait_exit(60) == 0);
  CHECK(server.wait_exit(60) == 0);
}

TEST_CASE("psrt-launch whose reader goes away stops the job and removes the job's secret",
          "[integration]") {
  const std::string dir = test::temp_dir("oslimits");
  const std::string cfg = job(dir, 1000000, "security: {curve: true}\n");
  std::filesystem::create_directories(dir + "/tmp");
  // `head -1` takes the launch's first line and exits; the launch's next line meets a closed pipe.
  auto launch = bash("TMPDIR=" + dir + "/tmp " + test::bin("psrt-launch") + " " + cfg +
                     " 2>&1 | head -1");
  const auto rc = launch.wait_exit(60);
  INFO(launch.output());
  CHECK(rc == 128 + 13);  // SIGPIPE's status, as the signal would have given, but cleaned up
  CHECK(test::processes_with(cfg).empty());
  CHECK(std::filesystem::is_empty(dir + "/tmp"));  // no psrt-launch-XXXXXX/job.secret left
  // The log elsewhere: the launch's next stdout line was the job's result, a million iterations
  // later. The closed pipe is seen as it closes.
  auto quiet = bash("TMPDIR=" + dir + "/tmp " + test::bin("psrt-launch") + " " + cfg +
                    " 2>/dev/null | head -1");
  CHECK(quiet.wait_exit(60) == 128 + 13);
  CHECK(test::processes_with(cfg).empty());
}

TEST_CASE("psrt-launch whose reader stops reading still finishes its job and says what it dropped",
          "[integration]") {
  // A paused pager or `| sleep 600`: the launch blocked on its next line, stopped draining its
  // children's pipes, and every process of the job then blocked on its own next log line.
  const std::string dir = test::temp_dir("oslimits");
  const std::string cfg = write_job(dir, "iterations: 2000, log_every: 1", tiny_replay());
  const std::string fifo = dir + "/out";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const int rd = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);  // so that the writer's open returns
  REQUIRE(rd >= 0);
  auto launch = bash("exec " + test::bin("psrt-launch") + " " + cfg +
                     " --output-buffer-kib 16 > " + fifo + " 2>&1");
  std::string seen;  // read until the worker trains, then not at all until the job is over
  char buf[4096];
  for (int i = 0; i < 600 && seen.find("training tiny") == std::string::npos; ++i) {
    pollfd p{rd, POLLIN, 0};
    ::poll(&p, 1, 100);
    const ssize_t n = ::read(rd, buf, sizeof buf);
    if (n > 0) seen.append(buf, std::size_t(n));
  }
  REQUIRE_THAT(seen, Catch::Contains("training tiny"));
  bool ended = false;  // the daemons end while nobody reads
  for (int i = 0; i < 1200 && !ended; ++i) {
    ended = test::processes_with(cfg).empty();
    if (!ended) ::usleep(100000);
  }
  CHECK(ended);
  ::fcntl(rd, F_SETFL, 0);  // now the reader takes everything
  for (ssize_t n; (n = ::read(rd, buf, sizeof buf)) > 0;) seen.append(buf, std::size_t(n));
  ::close(rd);
  CHECK(launch.wait_exit(60) == 0);
  INFO(seen.substr(seen.size() > 2000 ? seen.size() - 2000 : 0));
  CHECK_THAT(seen, Catch::Contains("lines dropped here: this output's reader fell 16 KiB behind"));
  CHECK_THAT(seen, Catch::Contains("psrt-launch: every process finished ("));
  CHECK_THAT(seen, Catch::Contains("lines of output lost"));
  // The job ran to its end, and its result (stdout) was not dropped with the log lines.
  CHECK_THAT(seen, Catch::Contains("PSRT_RESULT iterations=2000 "));
}

TEST_CASE("under an address-space limit with no room for OpenBLAS a native job ends naming it",
          "[integration]") {
  // OpenBLAS retries its buffer's malloc for ever: the worker hung on its first layer.
  const std::string dir = test::temp_dir("oslimits");
  const std::string cfg = write_job(dir, "iterations: 5, log_every: 0, evaluate: false",
                                    "{backend: native, arch: mlp, hidden: [16]}",
                                    "data: {train_limit: 256}\n");
  // Where the worker finds no room depends on when its other threads take their malloc arenas:
  // before OpenBLAS's buffer (refused at start, exit 2) or after (out of memory); either way the
  // job ends at once naming the limit, where it hung for ever.
  for (const char* limit : {"300000", "350000"}) {
    auto launch = bash(std::string("ulimit -v ") + limit + "; exec " + test::bin("psrt-launch") +
                       " " + cfg);
    const auto rc = launch.wait_exit(60);
    INFO(launch.output());
    REQUIRE(rc);
    CHECK(*rc != 0);
    const bool no_room = launch.output().find("leaves no room for OpenBLAS's buffers") !=
                         std::string::npos;
    CHECK((no_room ? *rc == 2 : *rc == 1));
    CHECK_THAT(launch.output(),
               Catch::Contains("the address-space limit (ulimit -v) of ") ||
                   Catch::Contains("out of memory (the address-space limit, ulimit -v, is "));
    CHECK(test::processes_with(cfg).empty());
  }
}

TEST_CASE("psrt-launch whose stdout cannot be written says so and fails", "[integration]") {
  // A full disk under `> file`: the job's results were lost and the launch exited 0.
  const std::string cfg = job(test::temp_dir("oslimits"), 3);
  auto launch = bash("exec " + test::bin("psrt-launch") + " " + cfg + " > /dev/full");
  const auto rc = launch.wait_exit(60);
  INFO(launch.output());
  CHECK(rc == 1);
  CHECK_THAT(launch.output(), Catch::Contains("could not be written to stdout (a full disk?), "
                                              "the job's results among them"));
  // With `2>&1` (one queue, no stderr of its own to say it on) the launch exited 0, its results
  // gone: it fails the same, silently.
  auto both = bash("exec " + test::bin("psrt-launch") + " " + cfg + " > /dev/full 2>&1");
  CHECK(both.wait_exit(60) == 1);
  CHECK(test::processes_with(cfg).empty());
}

// Connections that send nothing used up server 0's open-file limit: the processes that then could
// not connect were blamed at the start deadline, and the server said nothing (a wire probe).
TEST_CASE("a server that cannot accept a connection says why", "[integration]") {
  const std::string cfg = job(test::temp_dir("oslimits"), 3);
  auto server = bash("ulimit -n 128; exec " + test::bin("psrt-server") + " --config " + cfg +
                     " --set cluster.coordinator=tcp://127.0.0.1:0");
  REQUIRE(server.wait_line("PSRT_LISTENING ", 30));
  const std::string& out = server.output();
  const auto at = out.find("PSRT_LISTENING tcp://127.0.0.1:") + 31;
  const int port = std::stoi(out.substr(at, out.find('\n', at) - at));
  std::vector<int> idle;
  for (int i = 0; i < 160; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(uint16_t(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
      idle.push_back(fd);
    } else if (fd >= 0) {
      ::close(fd);
    }
  }
  CHECK(server.wait_line("could not accept a connection: Too many open files", 20));
  for (int fd : idle) ::close(fd);
  server.kill(SIGTERM);
  (void)server.wait_exit(30);
}
