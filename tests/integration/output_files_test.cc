// A job's output files that cannot be written (job.dump_params, the timeline: a full disk, a bad
// folder) are reported naming the file and the system's error, and leave nothing half-written;
// the job still runs its evaluation and shuts down cleanly, and a failed dump fails the launch.
// Before, a full disk left a truncated parameter dump, lost the test accuracy that came after it,
// and left empty traces without a word.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "tests/common/idx_files.h"
#include "tests/integration/proc_util.h"

using namespace psrt;
using namespace psrt::test;
namespace fs = std::filesystem;

TEST_CASE("Output files that cannot be written are reported and leave no partial file",
          "[integration][files]") {
  const std::string dir = temp_dir("outfiles");
  write_quadrant_split(dir, "train", 256, 1);
  write_quadrant_split(dir, "t10k", 64, 2);
  write_file(dir + "/job.yaml",
             "job: {id: outfiles, iterations: 20, batch_size: 16, seed: 1, log_every: 0, "
             "dump_params: \"" +
                 dir +
                 "/p-{rank}.bin\"}\n"
                 "cluster: {servers: 1, workers: 2}\n"
                 "model: {hidden: [16]}\n"
                 "data: {dataset: idx, path: " +
                 dir +
                 ", image_rows: 12, image_cols: 12, classes: 4}\n"
                 "optimizer: {type: sgd, lr: 0.05}\n"
                 "timeline: " +
                 dir + "/tl\n");
  // Where worker 1's dump and worker 0's trace would first be written stands a folder: the
  // writes fail as they would on a full or read-only disk (whatever the user's rights).
  fs::create_directories(dir + "/p-1.bin.tmp");
  fs::create_directories(dir + "/tl/worker-0.json.part");
  Proc launch("launch", {bin("psrt-launch"), dir + "/job.yaml"});
  const auto rc = launch.wait_exit(120);
  const std::string out = launch.output();
  INFO(out);
  REQUIRE(rc.has_value());
  CHECK(*rc != 0);  // the dump asked for is missing
  CHECK_THAT(out, Catch::Contains("job.dump_params: " + dir + "/p-1.bin: cannot create"));
  CHECK_THAT(out, Catch::Contains("timeline not written: " + dir + "/tl/worker-0.json"));
  CHECK_THAT(out, Catch::Contains("test accuracy: "));  // worker 0 still evaluated
  CHECK_THAT(out, Catch::Contains("shut down:"));       // the server finished as usual
  CHECK_THAT(out, !Catch::Contains("lost"));
  // Whole files or none.
  const auto params = uintmax_t((144 * 16 + 16 + 16 * 4 + 4) * 4);
  CHECK(fs::file_size(dir + "/p-0.bin") == params);
  CHECK_FALSE(fs::exists(dir + "/p-1.bin"));
  CHECK_FALSE(fs::exists(dir + "/tl/worker-0.json"));
  CHECK(fs::file_size(dir + "/tl/worker-1.json") > 0);
  CHECK(fs::file_size(dir + "/tl/server-0.json") > 0);

  // A timeline folder that cannot be created (a file stands there): no trace, the run goes on.
  fs::remove(dir + "/p-1.bin.tmp");
  Proc again("launch", {bin("psrt-launch"), dir + "/job.yaml", "--set",
                        "timeline=" + dir + "/job.yaml"});
  const auto rc2 = again.wait_exit(120);
  INFO(again.output());
  CHECK(rc2 == 0);
  CHECK_THAT(again.output(), Catch::Contains("timeline: cannot create the folder '" + dir +
                                             "/job.yaml'"));
  CHECK_THAT(again.output(), Catch::Contains("test accuracy: "));
}

// A daemon started by hand (a cluster script) whose stdout is on a full disk lost PSRT_RESULT and
// the accuracy and exited 0, saying nothing.
TEST_CASE("a worker whose results cannot be written to stdout fails saying so",
          "[integration][files]") {
  const std::string dir = temp_dir("outfull");
  write_file(dir + "/job.yaml",
             "job: {id: outfull, iterations: 3, log_every: 0}\n"
             "cluster: {servers: 1, workers: 1}\n"
             "model: {backend: replay, profile: '" +
                 source("tests/integration/data/tiny_profile.yaml") + "'}\n");
  Daemons d = start_daemons(dir + "/job.yaml", 1, 0);
  REQUIRE_FALSE(d.endpoint.empty());
  Proc worker("worker", {"/bin/sh", "-c",
                         "exec '" + bin("psrt-worker") + "' --config '" + dir +
                             "/job.yaml' --set cluster.coordinator=" + d.endpoint + " >/dev/full"});
  const auto rc = worker.wait_exit(60);
  INFO(worker.output());
  CHECK(rc == std::optional<int>(1));
  CHECK_THAT(worker.output(), Catch::Contains("output (stdout) could not be written") &&
                                  Catch::Contains("PSRT_RESULT"));
  CHECK(d.procs[0]->wait_exit(60) == std::optional<int>(0));  // the job itself ended well
}
