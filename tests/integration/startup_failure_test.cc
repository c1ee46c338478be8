// A process that fails at start-up, before it registers (a data file missing on its host, a
// calibration file that does not parse), tells the coordinator why (core/abort_notice.h, and
// PsClient's I/O thread), and the job ends at once everywhere with that reason: before, the rest
// waited out cluster.start_timeout_s and then blamed the silence. A process that comes after the
// job ended is told too (server/server_latecomers.cc), instead of waiting for a coordinator that
// is gone.
#include <catch2/catch.hpp>

#include <string>

#include "tests/common/idx_files.h"
#include "tests/integration/proc_util.h"

using namespace psrt::test;

namespace {

// start_timeout_s is far above what each process is given to exit: nobody may wait it out.
std::string job_yaml(const std::string& grouping) {
  return "job: {id: startup, iterations: 20, batch_size: 32, log_every: 0, evaluate: false}\n"
         "cluster: {servers: 1, workers: 2, start_timeout_s: 300}\n"
         "model: {backend: native, arch: mlp, hidden: [16]}\n"
         "data: {train_limit: 2000}\n"
         "scheduler: {grouping: " + grouping + "}\n";
}

struct Coordinator {
  Proc server;
  std::string endpoint;  // "cluster.coordinator=..."
  explicit Coordinator(const std::string& cfg)
      : server("server 0", {bin("psrt-server"), "--config", cfg, "--rank", "0", "--set",
                            "cluster.coordinator=tcp://127.0.0.1:0"}) {
    if (!server.wait_line("PSRT_LISTENING ", 30)) return;
    const auto& out = server.output();
    const auto at = out.find("PSRT_LISTENING ") + 15;
    endpoint = "cluster.coordinator=" + out.substr(at, out.find('\n', at) - at);
  }
  Proc worker(const std::string& cfg, int rank, std::vector<std::string> sets = {}) {
    std::vector<std::string> argv{bin("psrt-worker"), "--config", cfg, "--rank",
                                  std::to_string(rank), "--set", endpoint};
    for (auto& s : sets) {
      argv.push_back("--set");
      argv.push_back(std::move(s));
    }
    return Proc("worker " + std::to_string(rank), argv);
  }
};

// A folder of 12x12 images in 4 classes with training files only, and a job on it that
// evaluates, of `iterations` and `extra` YAML; returns the folder (job.yaml in it).
std::string without_test_set(const std::string& tag, int iterations, const std::string& extra) {
  const std::string dir = temp_dir(tag);
  write_quadrant_split(dir, "train", 640, 1);  // no t10k files
  write_file(dir + "/job.yaml",
             "job: {id: startup, iterations: " + std::to_string(iterations) +
                 ", batch_size: 16, log_every: 0, evaluate: true}\n"
                 "cluster: {servers: 1, workers: 2, start_timeout_s: 300}\n"
                 "model: {hidden: [8]}\n"
                 "data: {dataset: idx, path: " + dir + ", image_rows: 12, image_cols: 12, "
                 "classes: 4}\n" + extra);
  return dir;
}

void ends_failed_naming(Proc& p, const std::string& why) {
  const auto rc = p.wait_exit(60);
  INFO(p.output());
  REQUIRE(rc.has_value());
  CHECK(*rc != 0);
  CHECK_THAT(p.output(), Catch::Contains(why));
}

}  // namespace

TEST_CASE("a worker missing its data ends the job at once, telling even those still to come",
          "[integration][startup]") {
  const std::string dir = temp_dir("startup-data");
  write_file(dir + "/job.yaml", job_yaml("none"));
  Coordinator c(dir + "/job.yaml");
  REQUIRE(!c.endpoint.empty());
  Proc w1 = c.worker(dir + "/job.yaml", 1, {"data.path=" + dir + "/no-such-folder"});
  const std::string why = "worker 1 gave up before registering: data.path: '" + dir +
                          "/no-such-folder' is not a folder";
  REQUIRE(c.server.wait_line("gave up before registering", 60));
  ends_failed_naming(w1, "no-such-folder");
  // Worker 0 comes after the job ended: it is told why, and does not wait for the start.
  Proc w0 = c.worker(dir + "/job.yaml", 0);
  ends_failed_naming(w0, "job aborted by the coordinator: " + why);
  ends_failed_naming(c.server, why);
  CHECK_THAT(c.server.output(), Catch::Contains("told worker 0, which had not registered"));
}

TEST_CASE("a worker whose grouping search cannot run ends the job at once, naming why",
          "[integration][startup]") {
  const std::string dir = temp_dir("startup-calibration");
  write_file(dir + "/job.yaml", job_yaml("auto"));
  write_file(dir + "/bad.yaml", "worker_message_us: [1, 2\n");
  Coordinator c(dir + "/job.yaml");
  REQUIRE(!c.endpoint.empty());
  Proc w1 = c.worker(dir + "/job.yaml", 1);
  REQUIRE(c.server.wait_line("worker 1 registered", 60));
  // Worker 0 searches before it registers; its calibration file does not parse.
  Proc w0 = c.worker(dir + "/job.yaml", 0, {"scheduler.calibration=" + dir + "/bad.yaml"});
  const std::string why = "worker 0 gave up before registering: scheduler.calibration: " + dir;
  ends_failed_naming(w0, "bad.yaml: not valid YAML");
  CHECK(w0.wait_exit(0) == std::optional<int>(2));  // the job's own file: a refusal
  ends_failed_naming(w1, "job aborted by the coordinator: " + why);
  ends_failed_naming(c.server, why);
}

// Worker 0 evaluates at the end, so it reads its test set at start: a test file missing on its
// host stops the job before training, not after it.
TEST_CASE("a test set missing on worker 0's host stops the job before training",
          "[integration][startup]") {
  const std::string dir = without_test_set("startup-test-set", 2000, "");
  Coordinator c(dir + "/job.yaml");
  REQUIRE(!c.endpoint.empty());
  Proc w1 = c.worker(dir + "/job.yaml", 1);
  REQUIRE(c.server.wait_line("worker 1 registered", 60));
  Proc w0 = c.worker(dir + "/job.yaml", 0);
  const std::string why = "worker 0 gave up before registering: IDX file " + dir + "/t10k-images";
  ends_failed_naming(w0, "t10k-images");
  ends_failed_naming(w1, "job aborted by the coordinator: " + why);
  ends_failed_naming(c.server, why);
}

// The same for a pipeline: replica 0's first stage, which feeds the test-set passes, reads the
// test set at start (a job far too long to reach its evaluation in the time given here).
TEST_CASE("a test set missing on a pipeline's first stage stops the job before training",
          "[integration][startup]") {
  const std::string dir = without_test_set("startup-stage-test-set", 1000000,
                                           "placement: {mode: model, partitions: 2, "
                                           "micro_batches: 2}\n");
  Proc launch("launch", {bin("psrt-launch"), dir + "/job.yaml"});
  ends_failed_naming(launch, dir + "/t10k-images");
}

TEST_CASE("a server the workers cannot reach is named when the start never ends",
          "[integration][startup]") {
  // Server 1 advertised an address no worker reaches (a firewall, a wrong advertise_host): the
  // job ended blaming worker 0 and advising a longer start_timeout_s.
  const std::string dir = temp_dir("startup-reach");
  write_file(dir + "/job.yaml",
             "job: {id: startup, iterations: 20, batch_size: 32, log_every: 0, evaluate: false}\n"
             "cluster: {servers: 2, workers: 2, start_timeout_s: 8, heartbeat_s: 0.2}\n"
             "model: {backend: native, arch: mlp, hidden: [16]}\n"
             "data: {train_limit: 2000}\n");
  Coordinator c(dir + "/job.yaml");
  REQUIRE(!c.endpoint.empty());
  Proc s1("server 1", {bin("psrt-server"), "--config", dir + "/job.yaml", "--rank", "1", "--set",
                       c.endpoint, "--set", "cluster.advertise_host=192.0.2.1"});
  Proc w0 = c.worker(dir + "/job.yaml", 0);
  Proc w1 = c.worker(dir + "/job.yaml", 1);
  ends_failed_naming(c.server, "worker 0 waits for server 1 at tcp://192.0.2.1:");
  CHECK_THAT(c.server.output(), Catch::Contains("can those workers reach that address?"));
  CHECK_THAT(c.server.output(), !Catch::Contains("may need a longer cluster.start_timeout_s"));
  for (Proc* p : {&s1, &w0, &w1}) CHECK(p->wait_exit(60).has_value());
}
