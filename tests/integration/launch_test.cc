// psrt-launch: a process that dies stops the job with a non-zero exit; Ctrl-C stops every process;
// nothing is left behind either way.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/common/idx_files.h"
#include "tests/integration/proc_util.h"

using namespace psrt;

namespace {

// A job file of `yaml` in a new temporary folder named after `tag`; returns its path.
std::string job_file(const std::string& tag, const std::string& yaml) {
  const std::string cfg = test::temp_dir(tag) + "/job.yaml";
  test::write_file(cfg, yaml);
  return cfg;
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
  const auto procs = test::processes_with(cfg);
  INFO(launch.output());
  REQUIRE(procs.size() == 4);  // 2 servers, 2 workers
  const pid_t victim = test::daemon_pid(cfg, "psrt-worker", 1);
  REQUIRE(victim > 0);
  ::kill(victim, SIGKILL);
  const auto rc = launch.wait_exit(30);
  INFO(launch.output());
  REQUIRE(rc);
  CHECK(*rc != 0);
  // The signal named (a death by SIGXFSZ read "exited with code 153" and no more).
  CHECK_THAT(launch.output(), Catch::Contains("worker 1 exited with code 137 (128 + SIGKILL, "
                                              "Killed: killed by it?); stopping the others"));
  CHECK_THAT(launch.output(), !Catch::Contains("sending SIGKILL"));  // the others took SIGTERM
  CHECK(test::processes_with(cfg).empty());
}

TEST_CASE("Ctrl-C stops every process of the job", "[integration]") {
  const std::string dir = test::temp_dir("launch");
  const std::string cfg = long_job(dir);
  test::Proc launch("launch", {test::bin("psrt-launch"), cfg, "--grace", "3"});
  REQUIRE(launch.wait_line("training tiny", 60));
  REQUIRE(test::processes_with(cfg).size() == 4);
  launch.kill(SIGINT);
  const auto rc = launch.wait_exit(30);
  INFO(launch.output());
  CHECK(rc == 130);
  CHECK_THAT(launch.output(), Catch::Contains("stopping every process"));
  CHECK(test::processes_with(cfg).empty());
  // SIGTERM (a cluster's stop) is told apart from Ctrl-C: it exited 130 too.
  test::Proc term("launch", {test::bin("psrt-launch"), cfg, "--grace", "3"});
  REQUIRE(term.wait_line("training tiny", 60));
  term.kill(SIGTERM);
  CHECK(term.wait_exit(30) == 128 + SIGTERM);
  CHECK(test::processes_with(cfg).empty());
}

TEST_CASE("psrt-launch refuses a bad config with exit code 2", "[integration]") {
  const std::string dir = test::temp_dir("launch");
  test::write_file(dir + "/bad.yaml", "cluster: {workers: zero}\n");
  test::Proc launch("launch", {test::bin("psrt-launch"), dir + "/bad.yaml"});
  CHECK(launch.wait_exit(30) == 2);
  CHECK_THAT(launch.output(), Catch::Contains("cluster.workers: 'zero' is not an integer"));
  // A replay job counts no epochs: every worker refused it, once the servers were up.
  test::write_file(dir + "/replay.yaml",
                   "job: {epochs: 2}\nmodel: {backend: replay, profile: " +
                       test::source("tests/integration/data/tiny_profile.yaml") + "}\n");
  test::Proc replay("launch", {test::bin("psrt-launch"), dir + "/replay.yaml"});
  CHECK(replay.wait_exit(30) == 2);
  CHECK_THAT(replay.output(), Catch::Contains("job.iterations: must be set for the replay"));
  CHECK_THAT(replay.output(), !Catch::Contains("server 0 |"));
  // A priority list of the wrong length: a worker refused it once the servers were up.
  test::write_file(dir + "/priority.yaml",
                   "model: {backend: native, arch: mlp, hidden: [8]}\n"
                   "scheduler: {priority: [1, 2, 3]}\n");
  test::Proc priority("launch", {test::bin("psrt-launch"), dir + "/priority.yaml"});
  CHECK(priority.wait_exit(30) == 2);
  CHECK_THAT(priority.output(), Catch::Contains("scheduler.priority: lists 3 priorities"));
  CHECK_THAT(priority.output(), !Catch::Contains("server 0 |"));
  // CURVE without a secret on a cluster: every daemon refused it; psrt-launch makes its own.
  test::write_file(dir + "/curve.yaml", "security: {curve: true}\n");
  test::Proc check("launch", {test::bin("psrt-launch"), "--check", dir + "/curve.yaml"});
  CHECK(check.wait_exit(30) == 2);
  CHECK_THAT(check.output(), Catch::Contains("security.curve: true needs security.secret_file"));
}

TEST_CASE("psrt-launch refuses a job file its processes could not read again (a FIFO, a pipe)",
          "[integration]") {
  // Before, each process opened the path again: a pipe's was empty (the job trained the
  // defaults), a FIFO's blocked them.
  const std::string dir = test::temp_dir("launch-fifo");
  const std::string fifo = dir + "/job.yaml";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  test::Proc launch("launch", {test::bin("psrt-launch"), fifo});
  CHECK(launch.wait_exit(30) == 2);
  CHECK_THAT(launch.output(), Catch::Contains(fifo + ": not a regular file (a pipe?)"));
  // --check and a daemon started by hand blocked in open() for ever on a FIFO nobody writes.
  test::Proc check("launch", {test::bin("psrt-launch"), "--check", fifo});
  CHECK(check.wait_exit(30) == 2);
  CHECK_THAT(check.output(), Catch::Contains("nothing was read from it"));
  test::Proc server("server", {test::bin("psrt-server"), "--config", fifo});
  CHECK(server.wait_exit(30) == 2);
  CHECK_THAT(server.output(), Catch::Contains("nothing was read from it"));
}

TEST_CASE("a job one of whose workers refuses its data ends the launch with exit 2",
          "[integration]") {
  // Labels 0..3 with data.classes 3: each worker refuses its data (exit 2) and tells the job;
  // the processes the job then aborts exit 1, and were often quicker: the launch exited 1.
  const std::string dir = test::temp_dir("launch-labels");
  test::write_quadrant_split(dir, "train", 64, 1);
  test::write_quadrant_split(dir, "t10k", 16, 2);
  test::write_file(dir + "/job.yaml",
                   "job: {id: labels, iterations: 5, batch_size: 8, log_every: 0}\n"
                   "cluster: {servers: 2, workers: 2}\nmodel: {hidden: [8]}\n"
                   "data: {dataset: idx, path: " + dir +
                       ", image_rows: 12, image_cols: 12, classes: 3}\n");
  for (int run = 0; run < 2; ++run) {
    test::Proc launch("launch", {test::bin("psrt-launch"), dir + "/job.yaml"});
    const auto code = launch.wait_exit(60);
    INFO(launch.output());
    CHECK(code == std::optional<int>(2));
    CHECK_THAT(launch.output(), Catch::Contains("data.classes"));
  }
}

TEST_CASE("psrt-launch refuses a model that cannot be built or split before starting anything",
          "[integration]") {
  const std::string dir = test::temp_dir("launchmodel");
  const std::string cfg = dir + "/job.yaml";
  test::write_file(cfg,
                   "job: {id: modelcheck, iterations: 3, log_every: 0}\n"
                   "cluster: {servers: 1, workers: 2}\n"
                   "model: {arch: custom, layers: [{conv: 8, kernel: 5}, relu, pool, {fc: 10}]}\n");
  const auto refused = [&](const std::vector<std::string>& sets, const std::string& why) {
    std::vector<std::string> argv{test::bin("psrt-launch"), cfg};
    for (const auto& s : sets) argv.insert(argv.end(), {"--set", s});
    test::Proc launch("launch", argv);
    const auto code = launch.wait_exit(60);
    INFO(launch.output());
    CHECK(code == std::optional<int>(2));
    CHECK_THAT(launch.output(), Catch::Contains(why));
    CHECK_THAT(launch.output(), !Catch::Contains("server 0 |"));  // nothing was started
  };
  refused({"model.layers=[{conv: 8, kernel: 5}, pool, pool, pool, pool, pool, {fc: 10}]"},
          "model.layers[5] {pool: 2, stride: 2}");
  refused({"model.layers=[{fc: 32}, relu]"}, "not one per class (10): end with {fc: 10}");
  refused({"placement.mode=model", "placement.partitions=4", "cluster.workers=4",
           "model.layers=[{fc: 10}]"},
          "placement.partitions: 4 stages for 3 layers of custom");  // flatten, fc1, loss
  // Read by worker 0 only once every server was up, and blamed on scheduler.grouping there.
  test::write_file(dir + "/cal.yaml", "worker_message_us: -1\n");
  refused({"scheduler.calibration=" + dir + "/cal.yaml"},
          "scheduler.calibration: " + dir + "/cal.yaml: worker_message_us: -1 is out of range");
  refused({"model.layers=[relu, flatten]", "data.image_rows=1", "data.image_cols=2",
           "data.classes=2"},
          "has no parameters to train (model.layers)");
  test::Proc check("check", {test::bin("psrt-launch"), cfg, "--check"});
  CHECK(check.wait_exit(60) == std::optional<int>(0));
  CHECK_THAT(check.output(), Catch::Contains("1 servers, 2 workers"));
  // A --set before the job file took the file as its second value: "config is required".
  test::Proc set_first("check",
                       {test::bin("psrt-launch"), "--set", "cluster.workers=3", cfg, "--check"});
  CHECK(set_first.wait_exit(60) == std::optional<int>(0));
  CHECK_THAT(set_first.output(), Catch::Contains("1 servers, 3 workers"));
  // --check (what the Slurm and Kubernetes scripts run first) builds the network too.
  test::Proc bad("check", {test::bin("psrt-launch"), cfg, "--check", "--set",
                           "model.layers=[{conv: 8, kernel: 31, pad: 0}, {fc: 10}]"});
  CHECK(bad.wait_exit(60) == std::optional<int>(2));
  CHECK_THAT(bad.output(), Catch::Contains("does not fit its input 1x28x28"));
}

TEST_CASE("psrt-launch asks a psrt-placer it starts when placement.plan is auto", "[integration]") {
  const std::string cfg =
      job_file("launchplan",
               "job: {id: plantest, iterations: 3, log_every: 0}\n"
               "cluster: {servers: 1, workers: 1, heartbeat_s: 0.2, peer_timeout_s: 30}\n"
               "model: {backend: replay, profile: " +
                   test::source("tests/integration/data/tiny_profile.yaml") +
                   "}\n"
                   "placement:\n  plan: auto\n  micro_batches: 2\n"
                   "  devices: [{name: a, memory_gib: 1, gflops: 1000}, "
                   "{name: b, memory_gib: 1, gflops: 1000}]\n");
  test::Proc launch("launch", {test::bin("psrt-launch"), cfg});
  const auto code = launch.wait_exit(120);
  INFO(launch.output());
  REQUIRE(code == std::optional<int>(0));
  CHECK_THAT(launch.output(), Catch::Contains("placement plan written to"));
  CHECK_THAT(launch.output(), Catch::Contains("predicted step"));
  CHECK(test::processes_with(cfg).empty());  // the placer is gone too
  // A placer that does not answer is named: the launch killed psrt-place first, and said only
  // "place did not finish within 60 s".
  test::Proc nowhere("launch", {test::bin("psrt-launch"), cfg, "--set",
                                "placement.address=tcp://127.0.0.1:1", "--set",
                                "cluster.start_timeout_s=3"});
  CHECK(nowhere.wait_exit(60) == std::optional<int>(1));
  CHECK_THAT(nowhere.output(),
             Catch::Contains("psrt-placer at tcp://127.0.0.1:1 did not answer within 2.7"));
}

TEST_CASE("psrt-launch refuses an auto plan its workers could not run, before starting them",
          "[integration]") {
  // Inception-v3's branches placed on different devices: not a chain of stages. Before, every
  // process started and the workers refused the plan.
  const std::string cfg =
      job_file("launchdag",
               "job: {id: dagplan, iterations: 2, batch_size: 32, log_every: 0}\n"
               "cluster: {servers: 1, workers: 4}\n"
               "model: {backend: replay, profile: " +
                   test::source("bench/profiles/inception_v3.yaml") +
                   "}\n"
                   "optimizer: {type: adam, lr: 0.001}\n"
                   "placement:\n  mode: model\n  partitions: 4\n  micro_batches: 3\n"
                   "  plan: auto\n  devices:\n"
                   "    - {name: g0, memory_gib: 1.2, gflops: 10000}\n"
                   "    - {name: g1, memory_gib: 0.7, gflops: 5000}\n"
                   "    - {name: g2, memory_gib: 2.5, gflops: 20000}\n"
                   "    - {name: g3, memory_gib: 0.4, gflops: 10000}\n"
                   "  link: {bandwidth_bytes_per_s: 1.25e10}\n"
                   "  link_pairs: [{from: g0, to: g3, bandwidth_bytes_per_s: 1e8, "
                   "latency_ms: 5}]\n");
  test::Proc launch("launch", {test::bin("psrt-launch"), cfg});
  const auto code = launch.wait_exit(120);
  INFO(launch.output());
  CHECK(code == std::optional<int>(2));
  CHECK_THAT(launch.output(), Catch::Contains("netplacer's plan cannot run: placement.plan: ") &&
                                  Catch::Contains("is not one contiguous range"));
  CHECK_THAT(launch.output(), !Catch::Contains("worker 0 |"));
  // --check (the cluster scripts' first step) refuses auto: daemons started alone cannot use it.
  test::Proc check("check", {test::bin("psrt-launch"), cfg, "--check"});
  CHECK(check.wait_exit(60) == std::optional<int>(2));
  CHECK_THAT(check.output(), Catch::Contains("placement.plan: auto is resolved by psrt-launch"));
}

TEST_CASE("psrt-launch stops before starting anything when no plan fits", "[integration]") {
  const std::string cfg =
      job_file("launchnoplan",
               "job: {id: noplan, iterations: 3, log_every: 0}\n"
               "cluster: {servers: 1, workers: 1}\n"
               "model: {backend: replay, profile: " +
                   test::source("tests/integration/data/tiny_profile.yaml") +
                   "}\n"
                   "placement:\n  plan: auto\n"
                   "  devices: [{name: a, memory_bytes: 1000, gflops: 1000}]\n");
  test::Proc launch("launch", {test::bin("psrt-launch"), cfg});
  const auto code = launch.wait_exit(120);
  INFO(launch.output());
  CHECK(code == std::optional<int>(1));
  CHECK_THAT(launch.output(), Catch::Contains("bytes missing"));
  CHECK_THAT(launch.output(), Catch::Contains("psrt-launch: placement:"));
  CHECK(test::processes_with(cfg).empty());
}

namespace {

// A signal mask of a process's main thread as /proc shows it: `field` is SigBlk (blocked), SigIgn
// (ignored) or SigCgt (caught). All ones when it cannot be read.
uint64_t signal_mask(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(field + ":", 0) == 0) return std::stoull(line.substr(field.size() + 1), 0, 16);
  }
  return ~uint64_t(0);
}

constexpr uint64_t bit(int sig) { return uint64_t(1) << (sig - 1); }

}  // namespace

// Issue 17, row 4: the launcher blocked INT/TERM/CHLD/HUP for its signalfd and the children kept
// that mask through exec, so every stop waited out the grace period and ended in SIGKILL.
TEST_CASE("launched daemons catch SIGTERM, block only what they take, and stop without SIGKILL",
          "[integration][issue17]") {
  const std::string dir = test::temp_dir("launch");
  const std::string cfg = long_job(dir);
  test::Proc launch("launch", {test::bin("psrt-launch"), cfg, "--grace", "60"});
  REQUIRE(launch.wait_line("training tiny", 60));
  const auto procs = test::processes_with(cfg);
  INFO(launch.output());
  REQUIRE(procs.size() == 4);
  for (const auto& [pid, cmd] : procs) {
    INFO(cmd);
    // A server's main thread runs its I/O loop, which keeps the stop signals from itself: their
    // handler runs on a thread of its own (core/stop_signals.h). Nothing else is blocked.
    CHECK((signal_mask(pid, "SigBlk") & ~(bit(SIGTERM) | bit(SIGINT) | bit(SIGHUP))) == 0);
    CHECK((signal_mask(pid, "SigCgt") & bit(SIGTERM)) != 0);  // SIGTERM is told to the job
    CHECK((signal_mask(pid, "SigIgn") & bit(SIGINT)) != 0);   // Ctrl-C is the launcher's
  }
  launch.kill(SIGINT);
  const auto rc = launch.wait_exit(50);  // well inside the 60 s grace: SIGTERM did it
  INFO(launch.output());
  CHECK(rc == 130);
  CHECK_THAT(launch.output(), !Catch::Contains("sending SIGKILL"));
  CHECK(test::processes_with(cfg).empty());
}

TEST_CASE("psrt-launch refuses a scheduler.priority of the wrong length, split models too",
          "[integration]") {
  // A split model's list was not checked: every process started and each worker refused it.
  const std::string cfg = job_file("launchprio",
                                   "job: {id: prio, iterations: 2, batch_size: 8, log_every: 0}\n"
                                   "cluster: {servers: 1, workers: 2}\n"
                                   "model: {backend: native, arch: mlp, hidden: [16]}\n"
                                   "data: {train_limit: 64}\n"
                                   "scheduler: {priority: [1, 0]}\n");
  for (const std::string mode : {"data", "model"}) {  // one stage, then split in two
    const std::string partitions = mode == "data" ? "1" : "2";
    test::Proc launch("launch", {test::bin("psrt-launch"), cfg, "--set", "placement.mode=" + mode,
                                 "--set", "placement.partitions=" + partitions});
    INFO(mode);
    CHECK(launch.wait_exit(60) == std::optional<int>(2));
    INFO(launch.output());
    CHECK_THAT(launch.output(), Catch::Contains("scheduler.priority: lists 2 priorities, ") &&
                                    Catch::Contains(" has 4 tensors"));
    CHECK_THAT(launch.output(), !Catch::Contains("worker 0 |"));
  }
}

TEST_CASE("psrt-launch without its programs beside it names the missing one before starting",
          "[integration]") {
  // A psrt-launch copied alone said "server 0 | exec failed" for each process and exited 1.
  const std::string dir = test::temp_dir("launchalone");
  std::filesystem::copy_file(test::bin("psrt-launch"), dir + "/psrt-launch");
  const std::string cfg = dir + "/job.yaml";
  test::write_file(cfg, "job: {id: alone, iterations: 2, batch_size: 8, log_every: 0}\n"
                        "model: {backend: native, arch: mlp, hidden: [16]}\n"
                        "data: {train_limit: 64}\n");
  test::Proc launch("launch", {dir + "/psrt-launch", cfg});
  CHECK(launch.wait_exit(60) == std::optional<int>(2));
  INFO(launch.output());
  CHECK_THAT(launch.output(), Catch::Contains("cannot run " + dir + "/psrt-server: No such file"));
  CHECK_THAT(launch.output(), !Catch::Contains("server 0 |"));
}
