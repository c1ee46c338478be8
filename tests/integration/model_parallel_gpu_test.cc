// [gpu] Model parallelism on the gpu backend (real processes, psrt-launch, loopback; every
// worker on the machine's device): LeNet-5 and vgg-small split over 2 stages end within a float
// tolerance of the unsplit gpu job's parameters, and the test-set pass through the stages gives
// the unsplit job's accuracy. Reports itself skipped (ctest) where there is no CUDA device.
#include <catch2/catch.hpp>

#include <cmath>
#include <regex>
#include <string>
#include <vector>

#include "tests/engine/gpu_test_util.h"
#include "tests/integration/proc_util.h"

using namespace psrt;
using namespace psrt::test;
using psrt::engine::testing::have_gpu;

namespace {

// Largest absolute difference of a parameter after 3 SGD steps (magnitudes up to about 1). One
// micro-batch runs the same kernels on the same rows as the unsplit job, with the stage boundary
// copied exactly; several micro-batches sum the gradients of smaller GEMMs in another order.
constexpr float kOneMicroTolerance = 1e-5f;
constexpr float kMicroTolerance = 1e-4f;
// Test accuracy: a near-tie of the logits may fall the other way for a few samples.
constexpr double kAccuracyTolerance = 1e-3;

struct Job {
  std::string arch = "lenet5";
  int stages = 1;  // 1: the unsplit job
  int micro = 1;
  double dropout = 0.5;
  bool evaluate = false;
};

// Runs the job to a clean end; returns the launcher's output and the whole model's parameters
// (the stages' dumps concatenated in stage order).
std::vector<float> run(const Job& j, std::string* output = nullptr) {
  const std::string dir = temp_dir("mpg");
  const std::string placement = j.stages == 1
                                    ? "{mode: data}"
                                    : "{mode: model, partitions: " + std::to_string(j.stages) +
                                          ", micro_batches: " + std::to_string(j.micro) + "}";
  write_file(dir + "/job.yaml",
             "job: {id: mpg, iterations: 3, batch_size: 16, seed: 11, log_every: 0, evaluate: " +
                 std::string(j.evaluate ? "true" : "false") + ", dump_params: '" + dir +
                 "/params-{rank}.bin'}\n"
                 "cluster: {servers: 2, workers: " +
                 std::to_string(j.stages) +
                 ", start_timeout_s: 120, heartbeat_s: 0.2, peer_timeout_s: 30}\n"
                 "model: {backend: gpu, arch: " +
                 j.arch + ", dropout: " + std::to_string(j.dropout) +
                 "}\n"
                 "data: {train_limit: 512}\n"
                 "optimizer: {type: sgd, lr: 0.05, momentum: 0.9}\n"
                 "scheduler: {mode: preemptive, chunk_bytes: 8192, credit_bytes: 32768}\n"
                 "placement: " +
                 placement + "\n");
  Proc launch("launch", {bin("psrt-launch"), dir + "/job.yaml"});
  const auto rc = launch.wait_exit(300);
  INFO(launch.output());
  REQUIRE(rc == 0);
  if (output != nullptr) *output = launch.output();
  std::vector<float> params;
  for (int w = 0; w < j.stages; ++w) {
    const auto part = read_floats(dir + "/params-" + std::to_string(w) + ".bin");
    REQUIRE(!part.empty());
    params.insert(params.end(), part.begin(), part.end());
  }
  return params;
}

double final_accuracy(const std::string& output) {
  std::smatch m;
  REQUIRE(std::regex_search(output, m, std::regex(R"(test accuracy: ([0-9.]+))")));
  return std::stod(m[1]);
}

}  // namespace

TEST_CASE("LeNet-5 split over 2 gpu stages ends with the unsplit gpu job's parameters",
          "[gpu][integration][model_parallel]") {
  if (!have_gpu()) return;
  Job whole;
  whole.evaluate = true;
  std::string whole_out;
  const auto ref = run(whole, &whole_out);
  REQUIRE(ref.size() == 61706);
  SECTION("one micro-batch, and the test-set pass through the stages") {
    Job j = whole;
    j.stages = 2;
    std::string out;
    const auto got = run(j, &out);
    CHECK(max_difference(got, ref) <= kOneMicroTolerance);
    CHECK_THAT(out, Catch::Contains("worker 1 | test accuracy"));  // the last stage counts
    CHECK(std::fabs(final_accuracy(out) - final_accuracy(whole_out)) <= kAccuracyTolerance);
  }
  SECTION("4 micro-batches") {
    Job j;
    j.stages = 2;
    j.micro = 4;
    CHECK(max_difference(run(j), ref) <= kMicroTolerance);
  }
}

TEST_CASE("vgg-small split over 2 gpu stages ends with the unsplit gpu job's parameters",
          "[gpu][integration][model_parallel]") {
  if (!have_gpu()) return;
  SECTION("with dropout, one micro-batch: replica 0 draws worker 0's masks") {
    Job whole;
    whole.arch = "vgg-small";
    const auto ref = run(whole);
    Job j = whole;
    j.stages = 2;
    CHECK(max_difference(run(j), ref) <= kOneMicroTolerance);
  }
  SECTION("without dropout, 2 micro-batches (masks are drawn per micro-batch)") {
    Job whole;
    whole.arch = "vgg-small";
    whole.dropout = 0;
    const auto ref = run(whole);
    Job j = whole;
    j.stages = 2;
    j.micro = 2;
    CHECK(max_difference(run(j), ref) <= kMicroTolerance);
  }
}
