// The checkpoint tests' jobs: an MLP and vgg-small on the native backend, 2 servers and 3
// workers, checkpoints every kEvery iterations in DIR/ckpt, final parameters in DIR/params-R.bin.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tests/integration/proc_util.h"

namespace psrt::test::ckpt {

constexpr int kWorkers = 3;
constexpr int kEvery = 5;  // checkpoint.every

struct Job {
  std::string model;  // the `model:` mapping
  int iterations;
  int batch;
  int train_limit;
  int kill_after;     // server 1 is killed once it wrote this iteration's checkpoint
  std::string extra;  // more config (compression)
};

// The MLP: SGD momentum with weight decay and a learning-rate decay, several epochs (a reshuffle
// each). vgg-small: its dropout masks, which advance every iteration, must continue too.
inline const Job kMlp{"{backend: native, arch: mlp, hidden: [64, 32]}", 600, 32, 1500, 40, ""};
inline const Job kVgg{"{backend: native, arch: vgg-small, dropout: 0.5}", 40, 8, 400, 10, ""};

inline std::string job_config(const std::string& dir, const Job& job) {
  const std::string cfg = dir + "/job.yaml";
  test::write_file(
      cfg, "job: {id: ckpt, iterations: " + std::to_string(job.iterations) +
               ", batch_size: " + std::to_string(job.batch) +
               ", seed: 11, log_every: 0, evaluate: false, "
               "dump_params: '" +
               dir +
               "/params-{rank}.bin'}\n"
               "cluster: {servers: 2, workers: 3, heartbeat_s: 0.2, peer_timeout_s: 5}\n"
               "model: " +
               job.model +
               "\n"
               "data: {train_limit: " +
               std::to_string(job.train_limit) +
               "}\n"
               "optimizer: {type: sgd, lr: 0.02, momentum: 0.9, weight_decay: 0.0005, "
               "lr_decay: 0.9, lr_decay_every: 50}\n"
               "scheduler: {mode: preemptive, chunk_bytes: 8192, credit_bytes: 32768}\n"
               "checkpoint: {dir: " +
               dir + "/ckpt, every: " + std::to_string(kEvery) + ", keep: 2}\n" + job.extra);
  return cfg;
}

// A launch's end: its exit code (nullopt: still running after 2 minutes) and output.
struct Outcome {
  std::optional<int> rc;
  std::string output;
};

// `psrt-launch CFG --resume --set S ...`, run to its end.
inline Outcome resume_with(const std::string& cfg, const std::vector<std::string>& sets) {
  std::vector<std::string> argv{test::bin("psrt-launch"), cfg, "--resume"};
  for (const auto& s : sets) {
    argv.push_back("--set");
    argv.push_back(s);
  }
  test::Proc launch("resume", argv);
  const auto rc = launch.wait_exit(120);
  return {rc, launch.output()};
}

}  // namespace psrt::test::ckpt
