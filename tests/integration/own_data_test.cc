// A job on data of its own: an MNIST-style folder (plain IDX files) of 12x12 images in 4 classes,
// declared with data.image_rows, data.image_cols and data.classes, trains an MLP and a custom
// convnet to a clearly learned test accuracy through the whole runtime (2 workers, a server), and
// a convnet on colour images (data.image_channels);
// a declaration that does not match the files stops the job with the key named.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "tests/common/idx_files.h"
#include "tests/integration/proc_util.h"

using namespace psrt;
using namespace psrt::test;

namespace {

std::string job(const std::string& dir, const std::string& model) {
  return "job: {id: owndata, iterations: 60, batch_size: 16, seed: 3, log_every: 0}\n"
         "cluster: {servers: 1, workers: 2}\n"
         "model: " +
         model +
         "\n"
         "data: {dataset: idx, path: " +
         dir +
         ", image_rows: 12, image_cols: 12, classes: 4}\n"
         "optimizer: {type: adam, lr: 0.005}\n";
}

double accuracy(const std::string& output) {
  const auto at = output.find("test accuracy: ");
  return at == std::string::npos ? -1 : std::stod(output.substr(at + 15));
}

}  // namespace

TEST_CASE("A job trains on an IDX folder of its own image size and class count",
          "[integration][data]") {
  const std::string dir = temp_dir("owndata");
  write_quadrant_split(dir, "train", 640, 1);
  write_quadrant_split(dir, "t10k", 200, 2);
  for (const std::string model :
       {"{hidden: [32]}", "{arch: custom, layers: [{conv: 4, kernel: 3}, relu, pool, {fc: 4}]}"}) {
    INFO(model);
    write_file(dir + "/job.yaml", job(dir, model));
    Proc launch("launch", {bin("psrt-launch"), dir + "/job.yaml"});
    const auto rc = launch.wait_exit(120);
    INFO(launch.output());
    REQUIRE(rc == std::optional<int>(0));
    CHECK(accuracy(launch.output()) >= 0.9);  // chance is 0.25
  }
  // Declared sizes that are not the files': the key is named and nothing trains.
  write_file(dir + "/job.yaml", job(dir, "{hidden: [32]}"));
  Proc rows("launch", {bin("psrt-launch"), dir + "/job.yaml", "--set", "data.image_rows=14"});
  CHECK(rows.wait_exit(120) != std::optional<int>(0));
  CHECK_THAT(rows.output(),
             Catch::Contains("are 12x12, but data.image_rows x data.image_cols is 14x12"));
  Proc classes("launch", {bin("psrt-launch"), dir + "/job.yaml", "--set", "data.classes=3"});
  CHECK(classes.wait_exit(120) != std::optional<int>(0));
  CHECK_THAT(classes.output(), Catch::Contains("label 3 is not in [0, 3) (data.classes)"));
}

TEST_CASE("A job trains on colour images (idx4) declared with data.image_channels",
          "[integration][data]") {
  const std::string dir = temp_dir("owndata-colour");
  write_quadrant_split(dir, "train", 640, 1, 3);
  write_quadrant_split(dir, "t10k", 200, 2, 3);
  write_file(dir + "/job.yaml",
             job(dir, "{arch: custom, layers: [{conv: 4, kernel: 3}, relu, pool, {fc: 4}]}"));
  Proc launch("launch", {bin("psrt-launch"), dir + "/job.yaml", "--set", "data.image_channels=3"});
  const auto rc = launch.wait_exit(120);
  INFO(launch.output());
  REQUIRE(rc == std::optional<int>(0));
  CHECK(accuracy(launch.output()) >= 0.9);  // chance is 0.25
  // Left at its default (grey), the colour files are refused naming the key.
  Proc grey("launch", {bin("psrt-launch"), dir + "/job.yaml"});
  CHECK(grey.wait_exit(120) != std::optional<int>(0));
  CHECK_THAT(grey.output(), Catch::Contains("have 3 channels, but data.image_channels is 1"));
}

// On a cluster each host reads its own copy of data.path. With job.epochs a worker whose copy is
// smaller planned fewer iterations, finished first and stranded the rest until the progress
// watchdog fired (300 s by default) naming the finished worker as the one not pushing. Now the
// coordinator compares the counts at registration and ends the job at once, saying why.
TEST_CASE("Workers whose training sets differ in size are refused at registration",
          "[integration][data]") {
  const std::string dir = temp_dir("owndata-sizes");
  write_quadrant_split(dir, "train", 640, 1);
  write_quadrant_split(dir, "t10k", 64, 2);
  write_file(dir + "/job.yaml",
             "job: {id: sizes, epochs: 1, batch_size: 16, log_every: 0}\n"
             "cluster: {servers: 1, workers: 2, start_timeout_s: 120}\n"
             "model: {hidden: [8]}\n"
             "data: {dataset: idx, path: " +
                 dir + ", image_rows: 12, image_cols: 12, classes: 4}\n");
  const std::string cfg = dir + "/job.yaml";
  Proc server("server 0", {bin("psrt-server"), "--config", cfg, "--rank", "0", "--set",
                           "cluster.coordinator=tcp://127.0.0.1:0"});
  REQUIRE(server.wait_line("PSRT_LISTENING ", 30));
  const std::string& listening = server.output();
  const auto at = listening.find("PSRT_LISTENING ") + 15;
  const std::string endpoint =
      "cluster.coordinator=" + listening.substr(at, listening.find('\n', at) - at);
  Proc w0("worker 0", {bin("psrt-worker"), "--config", cfg, "--rank", "0", "--set", endpoint});
  REQUIRE(server.wait_line("worker 0 registered", 30));  // the count compared against
  // Worker 1's host holds 480 of the 640 images: 15 iterations of 16 per epoch, not 20.
  Proc w1("worker 1", {bin("psrt-worker"), "--config", cfg, "--rank", "1", "--set", endpoint,
                       "--set", "data.train_limit=480"});
  const std::string why = "worker 1 would run 15 iterations, worker 0 20";
  for (Proc* p : {&server, &w0, &w1}) {
    const auto rc = p->wait_exit(60);  // well inside start_timeout_s: nobody waits it out
    INFO(p->output());
    CHECK(rc.has_value());
    CHECK(rc != std::optional<int>(0));
    CHECK_THAT(p->output(), Catch::Contains(why));
  }
}

TEST_CASE("A process run with other shared settings is refused at registration, naming them",
          "[integration][data]") {
  // A --set or job file that differed on one host was taken silently: half the model trained
  // with another optimizer, or a worker with another batch size or worker count.
  const std::string dir = temp_dir("settings");
  write_file(dir + "/job.yaml",
             "job: {id: settings, iterations: 50, batch_size: 16, log_every: 0}\n"
             "cluster: {servers: 1, workers: 2, start_timeout_s: 120}\n"
             "model: {hidden: [8]}\n"
             "data: {train_limit: 640}\n");
  for (const auto& [set, why] :
       {std::pair<std::string, std::string>{"optimizer.lr=3",
                                            "optimizer.lr is 0.05 for server 0, 3 for worker 1"},
        {"cluster.workers=3", "cluster.workers is 2 for server 0, 3 for worker 1"}}) {
    Daemons d = start_daemons(dir + "/job.yaml", 1, 2, {{}, {"--set", set}});
    for (std::size_t i = 0; i < d.procs.size(); ++i) {
      const auto rc = d.procs[i]->wait_exit(60);  // inside start_timeout_s: nobody waits it out
      INFO(set << ", " << d.names[i] << ":\n" << d.procs[i]->output());
      CHECK((rc && *rc != 0));
      if (i == 0) CHECK_THAT(d.procs[i]->output(), Catch::Contains(why));
    }
  }
}

TEST_CASE("A data folder without test images, or with less than a batch per worker, is refused "
          "naming the keys", "[integration][data]") {
  const std::string dir = temp_dir("owndata-empty");
  write_quadrant_split(dir, "train", 64, 1);
  write_quadrant_split(dir, "t10k", 0, 2);
  write_file(dir + "/job.yaml", job(dir, "{hidden: [8]}"));
  // Before: "test accuracy: 0.0000" for a test split of no images.
  Proc none("launch", {bin("psrt-launch"), dir + "/job.yaml"});
  CHECK(none.wait_exit(60) == std::optional<int>(2));
  CHECK_THAT(none.output(), Catch::Contains("there are none (set job.evaluate: false"));
  // Before: "BatchSampler(n=64, rank=0, world=2, batch=40): ... fewer than one batch".
  Proc big("launch", {bin("psrt-launch"), dir + "/job.yaml", "--set", "job.batch_size=40",
                      "--set", "job.evaluate=false"});
  CHECK(big.wait_exit(60) == std::optional<int>(2));
  CHECK_THAT(big.output(), Catch::Contains("give each of 2 workers (cluster.workers) 32, fewer "
                                           "than one batch of job.batch_size 40"));
  // Split in two stages, the one replica reads all 64 (the count said "1 workers", of 2).
  Proc split("launch", {bin("psrt-launch"), dir + "/job.yaml", "--set", "job.batch_size=80",
                        "--set", "job.evaluate=false", "--set", "placement.mode=model",
                        "--set", "placement.partitions=2"});
  CHECK(split.wait_exit(60) == std::optional<int>(2));
  CHECK_THAT(split.output(), Catch::Contains("give each of 1 replicas (cluster.workers / "
                                             "placement.partitions) 64, fewer than one batch"));
}

TEST_CASE("A network whose initial outputs overflow is not blamed on the learning rate",
          "[integration][data]") {
  // 1024 linear layers without an activation: the loss is NaN at iteration 0, before any update,
  // and the message said "training diverged (lower optimizer.lr?)".
  const std::string dir = temp_dir("owndata-deep");
  write_quadrant_split(dir, "train", 64, 1);
  write_quadrant_split(dir, "t10k", 16, 2);
  std::string layers = "[";
  for (int i = 0; i < 1023; ++i) layers += "{fc: 4}, ";
  write_file(dir + "/job.yaml", job(dir, "{arch: custom, layers: " + layers + "{fc: 4}]}"));
  Proc launch("launch", {bin("psrt-launch"), dir + "/job.yaml", "--set", "cluster.workers=1"});
  CHECK(launch.wait_exit(120) == std::optional<int>(1));
  CHECK_THAT(launch.output(), Catch::Contains("at iteration 0, before any update: the initial "
                                              "network's outputs overflow"));
  CHECK_THAT(launch.output(), !Catch::Contains("lower optimizer.lr"));
}

TEST_CASE("A network too large for this machine's memory is refused before anything starts",
          "[integration][data]") {
  // 20000 channels of 28x28 pass every size check, but their activations at this batch need far
  // more than any machine has: the kernel killed the worker, with nothing said.
  const std::string dir = temp_dir("owndata-big");
  write_file(dir + "/job.yaml", "job: {id: big, iterations: 2, batch_size: 65536}\n"
                                "model: {arch: custom, layers: [{conv: 20000, kernel: 1}, "
                                "{fc: 10}]}\n");
  Proc launch("launch", {bin("psrt-launch"), dir + "/job.yaml"});
  CHECK(launch.wait_exit(60) == std::optional<int>(2));
  CHECK_THAT(launch.output(), Catch::Contains("job.yaml: model: the network") &&
                                  Catch::Contains(" needs at least ") &&
                                  Catch::Contains("at job.batch_size 65536), over the "));
}
