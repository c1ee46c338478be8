// Model parallelism on real processes (psrt-launch, loopback): a job split into pipeline stages
// ends with the parameters of the unsplit job — bit for bit with one micro-batch, within a float
// tolerance with several (the micro-batches' gradients are summed, so the order of additions
// differs) — and 2 replicas x 2 stages end as 2 data-parallel workers do. The stages' parameter
// dumps, concatenated in stage order, are the whole model's (keys are in forward order).
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <vector>

#include "tests/integration/proc_util.h"

using namespace psrt;
using namespace psrt::test;

namespace {

// Largest absolute difference allowed with several micro-batches, for parameters of magnitude
// up to about 1 after a few SGD steps: float sums of 2 to 4 terms in another order.
constexpr float kMicroTolerance = 1e-5f;

struct Job {
  std::string layers;  // arch custom: the layer list (YAML)
  std::string arch = "lenet5";
  int workers = 1;
  std::string placement = "{mode: data}";
  std::string extra;
  double dropout = 0.5;
  std::string mode = "preemptive";
  std::string eval = "evaluate: false";
  std::string optimizer = "{type: sgd, lr: 0.05, momentum: 0.9}";
  int iterations = 3;
};

std::string job_yaml(const Job& j, const std::string& dir) {
  return "job: {id: mp, iterations: " + std::to_string(j.iterations) +
         ", batch_size: 16, seed: 11, log_every: 0, " + j.eval +
         ", dump_params: '" + dir +
         "/params-{rank}.bin'}\n"
         "cluster: {servers: 2, workers: " +
         std::to_string(j.workers) +
         ", start_timeout_s: 60, heartbeat_s: 0.2, peer_timeout_s: 20}\n"
         "model: {backend: native, arch: " +
         j.arch + (j.arch == "vgg-small" ? ", dropout: " + std::to_string(j.dropout) : "") +
         (j.layers.empty() ? "" : ", layers: " + j.layers) + "}\n"
         "data: {train_limit: 512}\n"
         "optimizer: " + j.optimizer + "\n"
         "scheduler: {mode: " +
         j.mode +
         ", chunk_bytes: 8192, credit_bytes: 32768}\n"
         "placement: " +
         j.placement + "\n" + j.extra;
}

// Runs the job in `dir` to a clean end; returns the launcher's output.
std::string launch_job(const Job& j, const std::string& dir) {
  write_file(dir + "/job.yaml", job_yaml(j, dir));
  Proc launch("launch", {bin("psrt-launch"), dir + "/job.yaml"});
  const auto rc = launch.wait_exit(180);
  INFO(launch.output());
  REQUIRE(rc == 0);
  return launch.output();
}

// Runs the job; returns each replica's parameters: its stages' dumps concatenated in order.
std::vector<std::vector<float>> run(const Job& j, int partitions = 1) {
  const std::string dir = temp_dir("mp");
  launch_job(j, dir);
  std::vector<std::vector<float>> replicas;
  for (int w = 0; w < j.workers; ++w) {
    if (w % partitions == 0) replicas.emplace_back();
    const auto part = read_floats(dir + "/params-" + std::to_string(w) + ".bin");
    REQUIRE(!part.empty());
    replicas.back().insert(replicas.back().end(), part.begin(), part.end());
  }
  return replicas;
}

Job split(std::string arch, int stages, int micro, std::string extra = {}) {
  Job j;
  j.arch = std::move(arch);
  j.workers = stages;
  j.placement = "{mode: model, partitions: " + std::to_string(stages) +
                ", micro_batches: " + std::to_string(micro) + "}";
  j.extra = std::move(extra);
  return j;
}

}  // namespace

TEST_CASE("LeNet-5 split over 2 and 3 stages ends with the unsplit job's parameters",
          "[integration][model_parallel]") {
  Job whole;
  const auto ref = run(whole).at(0);
  REQUIRE(ref.size() == 61706);
  SECTION("2 stages, one micro-batch: bit for bit") {
    CHECK(run(split("lenet5", 2, 1), 2).at(0) == ref);
  }
  SECTION("3 stages, one micro-batch: bit for bit") {
    CHECK(run(split("lenet5", 3, 1), 3).at(0) == ref);
  }
  SECTION("2 stages, 4 micro-batches: within the tolerance") {
    const auto got = run(split("lenet5", 2, 4), 2).at(0);
    CHECK(max_difference(got, ref) <= kMicroTolerance);
  }
}

TEST_CASE("vgg-small split by a plan file ends with the unsplit job's parameters",
          "[integration][model_parallel]") {
  const std::string dir = temp_dir("mp-plan");
  write_file(
      dir + "/plan.yaml",
      "placer: test\n"
      "devices: [{name: d0, memory_gib: 4, gflops: 10}, {name: d1, memory_gib: 4, gflops: 10}]\n"
      "stages:\n"
      "  - {device: d1, layers: [conv1, relu1, conv2, relu2, pool1, conv3]}\n"
      "  - {device: d0, layers: [relu3, conv4, relu4, pool2, flatten, fc1, relu5, "
      "dropout1, fc2, loss]}\n");
  const std::string devices =
      "devices: [{name: d0, memory_gib: 4, gflops: 10}, {name: d1, memory_gib: 4, gflops: 10}]";
  Job whole;
  whole.arch = "vgg-small";
  const auto ref = run(whole).at(0);
  Job planned = split("vgg-small", 2, 1);
  planned.placement =
      "{mode: model, partitions: 2, plan: '" + dir + "/plan.yaml', " + devices + "}";
  CHECK(run(planned, 2).at(0) == ref);  // dropout included: replica 0 draws worker 0's masks
}

TEST_CASE("A custom network split over 3 stages ends with the unsplit job's parameters",
          "[integration][model_parallel]") {
  // A strided convolution, an overlapping pool and two fully connected layers: the stages cut
  // through shapes no built-in network has.
  Job whole;
  whole.arch = "custom";
  whole.layers = "[{conv: 6, kernel: 5, stride: 2}, relu, {pool: 3, stride: 2}, {fc: 32}, relu, "
                 "{fc: 10}]";
  const auto ref = run(whole).at(0);
  REQUIRE(ref.size() == 6 * 25 + 6 + 6 * 6 * 6 * 32 + 32 + 32 * 10 + 10);
  Job s = split("custom", 3, 1);
  s.layers = whole.layers;
  CHECK(run(s, 3).at(0) == ref);
}

TEST_CASE("vgg-small without dropout in 2 stages x 2 micro-batches is within the tolerance",
          "[integration][model_parallel]") {
  // Dropout masks are drawn per micro-batch, so with dropout the split job trains correctly but
  // not on the unsplit job's masks.
  Job whole;
  whole.arch = "vgg-small";
  whole.dropout = 0;
  const auto ref = run(whole).at(0);
  Job s = split("vgg-small", 2, 2);
  s.dropout = 0;
  CHECK(max_difference(run(s, 2).at(0), ref) <= kMicroTolerance);
}

TEST_CASE("2 replicas x 2 stages end as 2 data-parallel workers", "[integration][model_parallel]") {
  Job dp;
  dp.workers = 2;
  const auto ref = run(dp);
  Job hybrid;
  hybrid.workers = 4;
  hybrid.placement = "{mode: hybrid, partitions: 2}";
  const auto got = run(hybrid, 2);
  REQUIRE(got.size() == 2);
  CHECK(got[0] == ref[0]);
  CHECK(got[1] == ref[1]);
}

TEST_CASE("a replay profile runs split over 3 stages with micro-batches",
          "[integration][model_parallel]") {
  const std::string dir = temp_dir("mp-replay");
  write_file(dir + "/job.yaml",
             "job: {id: mpr, iterations: 4, batch_size: 8, log_every: 0}\n"
             "cluster: {servers: 2, workers: 6, start_timeout_s: 60, heartbeat_s: 0.2}\n"
             "model: {backend: replay, profile: '" +
                 source("tests/integration/data/tiny_profile.yaml") +
                 "'}\n"
                 "optimizer: {type: sgd, lr: 0.01}\n"
                 "placement: {mode: hybrid, partitions: 3, micro_batches: 2}\n");
  Proc launch("launch", {bin("psrt-launch"), dir + "/job.yaml"});
  const auto rc = launch.wait_exit(120);
  INFO(launch.output());
  REQUIRE(rc == 0);
  CHECK_THAT(launch.output(), Catch::Contains("PSRT_RESULT iterations=4"));
  CHECK_THAT(launch.output(), Catch::Contains("stage 2 of 3 (replica 1)"));
}

TEST_CASE("stages and micro-batches and activation transfers appear in the timeline",
          "[integration][model_parallel]") {
  const std::string dir = temp_dir("mp-timeline");
  Job j = split("lenet5", 2, 2, "timeline: '" + dir + "/tl'\n");
  run(j, 2);
  auto slurp = [](const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string w0 = slurp(dir + "/tl/worker-0.json"), w1 = slurp(dir + "/tl/worker-1.json");
  CHECK_THAT(w0, Catch::Contains("\"cat\":\"activation\""));  // sent forward, until acked
  CHECK_THAT(w0, Catch::Contains("fwd conv1 mb 1"));          // stage 0's layers only
  CHECK_THAT(w0, Catch::Contains("wait gradients mb 0"));
  CHECK_THAT(w1, Catch::Contains("\"cat\":\"activation grad\""));
  CHECK_THAT(w1, Catch::Contains("bwd fc3 mb 1"));
  CHECK_THAT(w1, !Catch::Contains("fwd conv1"));
}

TEST_CASE("every push mode and a codec apply to a split job unchanged",
          "[integration][model_parallel]") {
  const auto ref = run(Job{}).at(0);
  for (const char* mode : {"bigdl", "fifo", "nonpreemptive"}) {
    Job j = split("lenet5", 2, 1);
    j.mode = mode;
    INFO("mode " << mode);
    CHECK(run(j, 2).at(0) == ref);
  }
  // top-k with error feedback: each stage keeps its own tensors' residuals, as the whole worker.
  Job whole;
  whole.extra = "compression: {codec: topk, density: 0.1}\n";
  const auto ref_topk = run(whole).at(0);
  CHECK(ref_topk != ref);
  CHECK(run(split("lenet5", 2, 1, whole.extra), 2).at(0) == ref_topk);
  // LACO under Adam (compressed replies at replicas x density): the replies' density counted
  // the stages as workers, so the split job's replies were denser than the unsplit job's.
  Job adam;
  adam.optimizer = "{type: adam, lr: 0.002}";
  adam.extra = "compression: {codec: laco}\n";
  adam.iterations = 40;  // past LACO's dense hot start
  Job adam_split = split("lenet5", 2, 1, adam.extra);
  adam_split.optimizer = adam.optimizer;
  adam_split.iterations = adam.iterations;
  CHECK(run(adam_split, 2).at(0) == run(adam).at(0));
}

TEST_CASE("plan auto: psrt-launch asks psrt-placer and the stages run its plan",
          "[integration][model_parallel]") {
  const std::string devices =
      "devices: [{name: a, memory_gib: 1, gflops: 10}, {name: b, memory_gib: 1, gflops: 10}]";
  Job j = split("lenet5", 2, 1);
  j.placement = "{mode: model, partitions: 2, plan: auto, placer: even, " + devices + "}";
  CHECK(run(j, 2).at(0) == run(Job{}).at(0));  // the even plan: two stages of the same model
  // NetPlacer puts LeNet-5 on one of these devices: a plan of another stage count is refused
  // before any daemon starts.
  const std::string dir = temp_dir("mp-auto");
  Job n = split("lenet5", 2, 1);
  n.placement = "{mode: model, partitions: 2, plan: auto, " + devices + "}";
  write_file(dir + "/job.yaml", job_yaml(n, dir));
  Proc launch("launch", {bin("psrt-launch"), dir + "/job.yaml"});
  const auto rc = launch.wait_exit(120);
  INFO(launch.output());
  CHECK(rc == 2);
  CHECK_THAT(launch.output(), Catch::Contains("placement.partitions: 2, but netplacer's plan"));
}

namespace {
// The accuracies a job printed: PSRT_EVAL lines (every job.eval_every) then the final one.
std::vector<double> accuracies(const std::string& output) {
  std::vector<double> out;
  const std::regex line(R"((?:PSRT_EVAL iteration=\d+ accuracy=|test accuracy: )([0-9.]+))");
  for (std::sregex_iterator it(output.begin(), output.end(), line), end; it != end; ++it) {
    out.push_back(std::stod((*it)[1]));
  }
  return out;
}
}  // namespace

TEST_CASE("a split job evaluates the test set through its stages as the unsplit job does",
          "[integration][model_parallel]") {
  Job whole;
  whole.eval = "evaluate: true, eval_every: 2";
  const auto want = accuracies(launch_job(whole, temp_dir("mp-eval")));
  REQUIRE(want.size() == 2);  // after iteration 2, and at the end (3)
  for (int stages : {2, 3}) {
    Job j = split("lenet5", stages, 1);
    j.eval = whole.eval;
    const std::string out = launch_job(j, temp_dir("mp-eval"));
    INFO(stages << " stages\n" << out);
    // The same parameters (bit for bit, above) give the same answers; the pass goes through the
    // stages in batches of 16, the unsplit worker's in batches of 500.
    const auto got = accuracies(out);
    REQUIRE(got.size() == 2);
    CHECK(std::fabs(got[0] - want[0]) <= 2e-4);
    CHECK(std::fabs(got[1] - want[1]) <= 2e-4);
    const std::string last = "worker " + std::to_string(stages - 1) + " | test accuracy";
    CHECK_THAT(out, Catch::Contains(last));  // the last stage has the logits
  }
}

// With job.evaluate: false, a last iteration that is a multiple of eval_every was never evaluated
// (split or not): the trained model's accuracy was never printed.
TEST_CASE("eval_every evaluates the last iteration when job.evaluate is off",
          "[integration][model_parallel]") {
  for (int stages : {1, 2}) {
    Job j = stages == 1 ? Job{} : split("lenet5", stages, 1);
    j.eval = "evaluate: false, eval_every: 3";
    j.iterations = 6;
    const std::string out = launch_job(j, temp_dir("mp-eval-last"));
    INFO(stages << " stage(s)\n" << out);
    CHECK(accuracies(out).size() == 2);
    CHECK_THAT(out, Catch::Contains("PSRT_EVAL iteration=3 ") &&
                        Catch::Contains("PSRT_EVAL iteration=6 "));
    CHECK_THAT(out, !Catch::Contains("test accuracy:"));
  }
}
