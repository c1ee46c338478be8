// Real processes on loopback: 2 servers and 3 workers train the native MLP for k iterations via
// psrt-launch; the parameters must equal those of a single-process reference fed the same batches.
#include <catch2/catch.hpp>
#include <cblas.h>

#include <cmath>
#include <fstream>
#include <vector>

#include "config/job_config.h"
#include "core/config.h"
#include "server/optimizer.h"
#include "tests/integration/proc_util.h"
#include "data/idx.h"
#include "data/sampler.h"
#include "engine/net_spec.h"
#include "engine/network.h"
#include "worker/native_backend.h"

using namespace psrt;

namespace {

constexpr int kIterations = 6;

std::string cluster_config(const std::string& dir, const std::string& optimizer,
                           const std::string& mode, const std::string& extra,
                           const std::string& grouping, const std::string& scheduler,
                           int iterations = kIterations) {
  return "job: {id: itest, iterations: " + std::to_string(iterations) +
         ", batch_size: 32, seed: 7, log_every: 0, evaluate: false, dump_params: '" + dir +
         "/params-{rank}.bin'}\n"
         "cluster: {servers: 2, workers: 3, start_timeout_s: 60, heartbeat_s: 0.2, "
         "peer_timeout_s: 20}\n"
         "model: {backend: native, arch: mlp, hidden: [64, 32]}\n"
         "data: {train_limit: 2000}\n"
         "optimizer: " + optimizer + "\n"
         "scheduler: {mode: " + mode + ", chunk_bytes: 4096, credit_bytes: 16384, grouping: '" +
         grouping + "'" + scheduler + "}\n" + extra;
}


// The same training, in one process: each worker's gradient on its own batch, the mean in rank
// order, the optimizer on each tensor.
std::vector<float> reference(const Config& c) {
  openblas_set_num_threads(c.job.blas_threads);  // as the workers do: the same kernels
  data::Dataset train = data::load_split(c.data.path, true, c.data.classes);
  train.n = int(c.data.train_limit);
  auto net = engine::build_network(engine::net_spec(c), c.job.seed);
  const auto opt = make_optimizer(c.optimizer);
  const auto& tensors = net->desc().tensors;
  std::vector<OptimizerState> states(tensors.size());
  const int W = c.cluster.workers;
  std::vector<data::BatchSampler> samplers;
  for (int w = 0; w < W; ++w) samplers.emplace_back(train.n, w, W, c.job.batch_size, c.job.seed);
  const std::size_t sample = net->input_size();
  for (uint64_t t = 0; t < uint64_t(c.job.iterations); ++t) {
    std::vector<std::vector<std::vector<float>>> grads(W);
    for (int w = 0; w < W; ++w) {
      const auto idx = samplers[w].batch(t);
      std::vector<float> images(idx.size() * sample);
      std::vector<int32_t> labels(idx.size());
      for (std::size_t i = 0; i < idx.size(); ++i) {
        std::copy_n(train.images.begin() + std::ptrdiff_t(std::size_t(idx[i]) * sample), sample,
                    images.begin() + std::ptrdiff_t(i * sample));
        labels[i] = train.labels[std::size_t(idx[i])];
      }
      net->set_batch(images.data(), labels.data(), int(idx.size()));
      const auto L = net->desc().layers.size();
      for (std::size_t l = 0; l < L; ++l) net->forward_layer(l);
      for (std::size_t l = L; l-- > 0;) net->backward_layer(l);
      for (const auto& t2 : tensors) {
        auto g = net->grad(t2.key);
        grads[w].emplace_back(g.begin(), g.end());
      }
    }
    for (const auto& td : tensors) {
      std::vector<const float*> in;
      for (int w = 0; w < W; ++w) in.push_back(grads[w][td.key].data());
      std::vector<float> mean(td.num_elements);
      aggregate_mean(mean, in);
      opt->update(net->param(td.key), mean, states[td.key]);
    }
  }
  std::vector<float> all;
  for (const auto& td : tensors) {
    auto p = net->param(td.key);
    all.insert(all.end(), p.begin(), p.end());
  }
  return all;
}

// Runs the job through psrt-launch and returns each worker's final parameters.
std::vector<std::vector<float>> run_cluster(const std::string& optimizer, const std::string& mode,
                                            std::string& cfg, const std::string& extra = "",
                                            const std::string& grouping = "none",
                                            const std::string& scheduler = "",
                                            int iterations = kIterations,
                                            std::string* output = nullptr) {
  const std::string dir = test::temp_dir("cluster");
  cfg = dir + "/job.yaml";
  test::write_file(cfg,
                   cluster_config(dir, optimizer, mode, extra, grouping, scheduler, iterations));
  test::Proc launch("launch", {test::bin("psrt-launch"), cfg});
  const auto rc = launch.wait_exit(120);
  INFO(launch.output());
  REQUIRE(rc == 0);
  if (output) *output = launch.output();
  std::vector<std::vector<float>> out;
  for (int w = 0; w < 3; ++w)
    out.push_back(test::read_floats(dir + "/params-" + std::to_string(w) + ".bin"));
  return out;
}

void compare(const std::vector<std::vector<float>>& workers, const std::vector<float>& expected) {
  for (std::size_t w = 0; w < workers.size(); ++w) {
    const auto& got = workers[w];
    REQUIRE(got.size() == expected.size());
    std::size_t bad = 0;
    double worst = 0;
    std::size_t worst_at = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      const double err =
          std::abs(double(got[i]) - expected[i]) / std::max(1e-6, std::abs(double(expected[i])));
      if (err > worst) worst_at = i;
      worst = std::max(worst, err);
      if (err > 1e-5) ++bad;
    }
    INFO("worker " << w << " worst relative error " << worst << " at element " << worst_at << ": "
                   << got[worst_at] << " vs " << expected[worst_at] << "; " << bad
                   << " elements off");
    CHECK(bad == 0);
  }
}

void run_and_compare(const std::string& optimizer, const std::string& mode) {
  std::string cfg;
  const auto workers = run_cluster(optimizer, mode, cfg);
  compare(workers, reference(load_config(cfg)));
}

}  // namespace

TEST_CASE("2 servers and 3 workers train like a single process (SGD, momentum, decay)",
          "[integration]") {
  run_and_compare("{type: sgd, lr: 0.1, momentum: 0.9, weight_decay: 0.001}", "fifo");
}

TEST_CASE("2 servers and 3 workers train like a single process (Adam)", "[integration]") {
  run_and_compare("{type: adam, lr: 0.01, weight_decay: 0.0001}", "preemptive");
}

TEST_CASE("every scheduling mode gives the same parameters", "[integration]") {
  const std::string sgd = "{type: sgd, lr: 0.1, momentum: 0.9, weight_decay: 0.001}";
  std::string cfg;
  const auto first = run_cluster(sgd, "bigdl", cfg);
  compare(first, reference(load_config(cfg)));
  for (const char* mode : {"fifo", "fifo_chunked", "nonpreemptive", "preemptive"}) {
    INFO("mode " << mode);
    const auto other = run_cluster(sgd, mode, cfg);
    for (std::size_t w = 0; w < other.size(); ++w) CHECK(other[w] == first[0]);  // bit for bit
  }
}

// Adaptive batching (scheduler.batch_bytes, on by default and so in every test above) changes
// timing only: with chunks of 4 KiB and 16 KiB of credit, up to four chunks travel together.
TEST_CASE("with and without adaptive batching the parameters are the same", "[integration]") {
  const std::string sgd = "{type: sgd, lr: 0.1, momentum: 0.9, weight_decay: 0.001}";
  std::string cfg;
  for (const char* mode : {"bigdl", "preemptive"}) {
    INFO("mode " << mode);
    const auto batched = run_cluster(sgd, mode, cfg);
    const auto alone = run_cluster(sgd, mode, cfg, "", "none", ", batch_bytes: 0");
    for (std::size_t w = 0; w < alone.size(); ++w) CHECK(alone[w] == batched[0]);  // bit for bit
  }
}

TEST_CASE("every mode with and without gradient grouping gives the same parameters",
          "[integration][grouping]") {
  const std::string sgd = "{type: sgd, lr: 0.1, momentum: 0.9, weight_decay: 0.001}";
  std::string cfg;
  const auto ungrouped = run_cluster(sgd, "fifo", cfg);
  // size:16KiB puts the MLP's six tensors in one group: fc1's weight (many chunks) goes chunk by
  // chunk, the five small ones as one message per server.
  for (const char* mode : {"bigdl", "fifo", "fifo_chunked", "nonpreemptive", "preemptive"}) {
    INFO("mode " << mode << " grouping size:16KiB");
    const auto grouped = run_cluster(sgd, mode, cfg, "", "size:16KiB");
    for (std::size_t w = 0; w < grouped.size(); ++w) CHECK(grouped[w] == ungrouped[0]);
  }
  INFO("preemptive, grouping auto (GradOptimizer's search)");
  const auto searched = run_cluster(sgd, "preemptive", cfg, "", "auto");
  for (std::size_t w = 0; w < searched.size(); ++w) CHECK(searched[w] == ungrouped[0]);
  // Horovod's fusion on worker 0's measured layer times, its groups released on a 3 ms timer.
  for (const char* mode : {"bigdl", "preemptive"}) {
    INFO("mode " << mode << " grouping horovod:16KiB:3ms");
    const auto timed = run_cluster(sgd, mode, cfg, "", "horovod:16KiB:3ms");
    for (std::size_t w = 0; w < timed.size(); ++w) CHECK(timed[w] == ungrouped[0]);
  }
}

// GradOptimizer's online trials (scheduler.grouping_trials): every worker runs the search's choice
// and its runners-up in turn between iterations, then keeps the fastest; the parameters are
// still those of the ungrouped run, bit for bit.
TEST_CASE("grouping trials switch groupings between iterations and change timing only",
          "[integration][grouping]") {
  const std::string sgd = "{type: sgd, lr: 0.1, momentum: 0.9, weight_decay: 0.001}";
  const int iterations = 14;  // the trials take 2 + 2 x 1 + 1 and the choice 1: half the job
  std::string cfg, log;
  const auto ungrouped = run_cluster(sgd, "preemptive", cfg, "", "none", "", iterations);
  for (const char* mode : {"bigdl", "preemptive"}) {
    INFO("mode " << mode);
    const auto tried = run_cluster(sgd, mode, cfg, "", "auto",
                                   ", grouping_trials: 2, grouping_trial_iterations: 1",
                                   iterations, &log);
    INFO(log);
    CHECK(log.find("grouping trials: 2 groupings taking turns") != std::string::npos);
    CHECK(log.find("grouping trials done: auto: ") != std::string::npos);
    CHECK(log.find("grouping kept: ") != std::string::npos);
    for (std::size_t w = 0; w < tried.size(); ++w) CHECK(tried[w] == ungrouped[0]);
  }
  // A job too short for the trials keeps the search's choice and says so.
  const auto short_run = run_cluster(sgd, "preemptive", cfg, "", "auto",
                                     ", grouping_trials: 3", kIterations, &log);
  CHECK(log.find("grouping trials skipped") != std::string::npos);
  CHECK(log.find("grouping trials done") == std::string::npos);
}

TEST_CASE("a compressed job with and without grouping gives the same parameters",
          "[integration][grouping][compress]") {
  const std::string laco =
      "compression: {codec: laco, density: 0.05, calibration_iters: 2, warmup_iters: 2, "
      "replies: compressed}\n";
  std::string cfg;
  const auto alone = run_cluster("{type: sgd, lr: 0.1, momentum: 0.9}", "preemptive", cfg, laco);
  // The same mode: a codec encodes each chunk, and the chunks depend on the mode.
  const auto grouped =
      run_cluster("{type: sgd, lr: 0.1, momentum: 0.9}", "preemptive", cfg, laco, "size:1MiB");
  for (std::size_t w = 0; w < grouped.size(); ++w) CHECK(grouped[w] == alone[0]);
  // Compressed chunks are small: batched by default; each chunk sent alone gives the same.
  const auto unbatched = run_cluster("{type: sgd, lr: 0.1, momentum: 0.9}", "preemptive", cfg,
                                     laco, "none", ", batch_bytes: 0");
  for (std::size_t w = 0; w < unbatched.size(); ++w) CHECK(unbatched[w] == alone[0]);
}

TEST_CASE("with compressed replies every worker ends with the same trained values",
          "[integration][compress]") {
  std::string cfg;
  const auto workers = run_cluster(
      "{type: sgd, lr: 0.1, momentum: 0.9}", "preemptive", cfg,
      "compression: {codec: laco, density: 0.05, calibration_iters: 2, warmup_iters: 2, "
      "replies: compressed}\n");
  const Config c = load_config(cfg);
  auto initial = engine::build_network(engine::net_spec(c), c.job.seed);
  std::vector<float> start;
  for (const auto& t : initial->desc().tensors) {
    auto p = initial->param(t.key);
    start.insert(start.end(), p.begin(), p.end());
  }
  REQUIRE(workers[0].size() == start.size());
  for (std::size_t w = 1; w < workers.size(); ++w) CHECK(workers[w] == workers[0]);  // bit for bit
  std::size_t moved = 0;
  for (std::size_t i = 0; i < start.size(); ++i) {
    REQUIRE(std::isfinite(workers[0][i]));
    if (workers[0][i] != start[i]) ++moved;
  }
  CHECK(moved > start.size() / 2);  // dense calibration updates touch every value
}
