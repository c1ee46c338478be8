// psrt-launch: a process that dies stops the job with a non-zero exit; Ctrl-C stops every process;
// nothing is left behind either way.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/types.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/integration/proc_util.h"

using namespace psrt;

namespace {

// Processes whose command line mentions `needle` (this job's unique config path), with their
// command lines.
std::vector<std::pair<pid_t, std::string>> processes_with(const std::string& needle) {
  std::vector<std::pair<pid_t, std::string>> out;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(e.path() / "cmdline", std::ios::binary);
    std::string cmd((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (auto& c : cmd)
      if (c == '\0') c = ' ';
    // Zombies have an empty command line: they are gone as processes.
    if (cmd.find(needle) != std::string::npos && cmd.find("psrt-launch") == std::string::npos) {
      out.emplace_back(pid_t(std::stol(name)), cmd);
    }
  }
  return out;
}

std::string long_job(const std::string& dir) {
  const std::string cfg = dir + "/job.yaml";
  test::write_file(cfg,
                   "job: {id: launchtest, iterations: 100000, log_every: 0}\n"
                   "cluster: {servers: 2, workers: 2, heartbeat_s: 0.2, peer_timeout_s: 30}\n"
                   "model: {backend: replay, profile: " +
                       test::source("tests/integration/data/tiny_profile.yaml") + "}\n");
  return cfg;
}

}  // namespace

TEST_CASE("psrt-launch stops the job when one process dies and exits non-zero", "[integration]") {
  const std::string dir = test::temp_dir("launch");
  const std::string cfg = long_job(dir);
  test::Proc launch("launch", {test::bin("psrt-launch"), cfg, "--grace", "3"});
  REQUIRE(launch.wait_line("training tiny", 60));
  const auto procs = processes_with(cfg);
  INFO(launch.output());
  REQUIRE(procs.size() == 4);  // 2 servers, 2 workers
  pid_t victim = 0;
  for (const auto& [pid, cmd] : procs)
    if (cmd.find("psrt-worker") != std::string::npos && cmd.find("--rank 1") != std::string::npos)
      victim = pid;
  REQUIRE(victim > 0);
  ::kill(victim, SIGKILL);
  const auto rc = launch.wait_exit(30);
  INFO(launch.output());
  REQUIRE(rc);
  CHECK(*rc != 0);
  CHECK_THAT(launch.output(), Catch::Contains("worker 1 exited with code 137; stopping the others"));
  CHECK(processes_with(cfg).empty());
}

TEST_CASE("Ctrl-C stops every process of the job", "[integration]") {
  const std::string dir = test::temp_dir("launch");
  const std::string cfg = long_job(dir);
  test::Proc launch("launch", {test::bin("psrt-launch"), cfg, "--grace", "3"});
  REQUIRE(launch.wait_line("training tiny", 60));
  REQUIRE(processes_with(cfg).size() == 4);
  launch.kill(SIGINT);
  const auto rc = launch.wait_exit(30);
  INFO(launch.output());
  CHECK(rc == 130);
  CHECK_THAT(launch.output(), Catch::Contains("stopping every process"));
  CHECK(processes_with(cfg).empty());
}

TEST_CASE("psrt-launch refuses a bad config with exit code 2", "[integration]") {
  const std::string dir = test::temp_dir("launch");
  test::write_file(dir + "/bad.yaml", "cluster: {workers: zero}\n");
  test::Proc launch("launch", {test::bin("psrt-launch"), dir + "/bad.yaml"});
  CHECK(launch.wait_exit(30) == 2);
  CHECK_THAT(launch.output(), Catch::Contains("cluster.workers: 'zero' is not an integer"));
}

TEST_CASE("psrt-launch asks a psrt-placer it starts when placement.plan is auto", "[integration]") {
  const std::string dir = test::temp_dir("launchplan");
  const std::string cfg = dir + "/job.yaml";
  test::write_file(cfg,
                   "job: {id: plantest, iterations: 3, log_every: 0}\n"
                   "cluster: {servers: 1, workers: 1, heartbeat_s: 0.2, peer_timeout_s: 30}\n"
                   "model: {backend: replay, profile: " +
                       test::source("tests/integration/data/tiny_profile.yaml") + "}\n"
                   "placement:\n  plan: auto\n  micro_batches: 2\n"
                   "  devices: [{name: a, memory_gib: 1, gflops: 1000}, "
                   "{name: b, memory_gib: 1, gflops: 1000}]\n");
  test::Proc launch("launch", {test::bin("psrt-launch"), cfg});
  const auto code = launch.wait_exit(120);
  INFO(launch.output());
  REQUIRE(code == std::optional<int>(0));
  CHECK_THAT(launch.output(), Catch::Contains("placement plan written to"));
  CHECK_THAT(launch.output(), Catch::Contains("predicted step"));
  CHECK(processes_with(cfg).empty());  // the placer is gone too
}

TEST_CASE("psrt-launch stops before starting anything when no plan fits", "[integration]") {
  const std::string dir = test::temp_dir("launchnoplan");
  const std::string cfg = dir + "/job.yaml";
  test::write_file(cfg,
                   "job: {id: noplan, iterations: 3, log_every: 0}\n"
                   "cluster: {servers: 1, workers: 1}\n"
                   "model: {backend: replay, profile: " +
                       test::source("tests/integration/data/tiny_profile.yaml") + "}\n"
                   "placement:\n  plan: auto\n"
                   "  devices: [{name: a, memory_bytes: 1000, gflops: 1000}]\n");
  test::Proc launch("launch", {test::bin("psrt-launch"), cfg});
  const auto code = launch.wait_exit(120);
  INFO(launch.output());
  CHECK(code == std::optional<int>(1));
  CHECK_THAT(launch.output(), Catch::Contains("bytes missing"));
  CHECK_THAT(launch.output(), Catch::Contains("psrt-launch: placement:"));
  CHECK(processes_with(cfg).empty());
}
