// Issue 17, row 7: checkpoints and restart, with real processes on loopback. A server killed with
// SIGKILL mid-run loses at most the iterations since the last checkpoint common to every server,
// and `psrt-launch --resume` then ends with the parameters of an uninterrupted run, bit for bit.
#include <catch2/catch.hpp>

#include <signal.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "core/durable_file.h"
#include "server/checkpoint_file.h"
#include "tests/integration/proc_util.h"
#include "tests/server/checkpoint_v1.h"

using namespace psrt;

namespace {

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
const Job kMlp{"{backend: native, arch: mlp, hidden: [64, 32]}", 600, 32, 1500, 40, ""};
const Job kVgg{"{backend: native, arch: vgg-small, dropout: 0.5}", 40, 8, 400, 10, ""};

std::string job_config(const std::string& dir, const Job& job) {
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

std::vector<std::vector<float>> params(const std::string& dir) {
  std::vector<std::vector<float>> out;
  for (int w = 0; w < kWorkers; ++w) {
    out.push_back(test::read_floats(dir + "/params-" + std::to_string(w) + ".bin"));
  }
  return out;
}

// The newest iteration for which every server (and with compression every worker, which
// checkpoints its codec state) has a checkpoint file.
uint64_t newest_common(const std::string& dir, bool workers) {
  std::map<uint64_t, int> count;
  for (uint32_t s = 0; s < 2; ++s)
    for (const auto& [it, path] : list_checkpoints(dir, "ckpt", s)) ++count[it];
  for (uint32_t w = 0; workers && w < kWorkers; ++w)
    for (const auto& [it, path] : list_checkpoint_files(dir, "ckpt", "worker", w)) ++count[it];
  const int all = 2 + (workers ? kWorkers : 0);
  uint64_t best = 0;
  for (const auto& [it, n] : count)
    if (n == all) best = it;
  return best;
}

void kill_and_resume(const Job& job) {
  const std::string ref_dir = test::temp_dir("ckpt-ref");
  {
    test::Proc launch("launch", {test::bin("psrt-launch"), job_config(ref_dir, job)});
    const auto rc = launch.wait_exit(180);
    INFO(launch.output());
    REQUIRE(rc == 0);
  }
  const auto reference = params(ref_dir);
  REQUIRE(reference[0].size() > 1000);
  for (const auto& p : reference) REQUIRE((p == reference[0]));

  const std::string dir = test::temp_dir("ckpt-kill");
  const std::string cfg = job_config(dir, job);
  {
    test::Proc launch("launch", {test::bin("psrt-launch"), cfg});
    REQUIRE(launch.wait_line("checkpoint of iteration " + std::to_string(job.kill_after) +
                                 " written to " + dir + "/ckpt/ckpt-server-1-",
                             120));
    const pid_t victim = test::daemon_pid(cfg, "psrt-server", 1);
    REQUIRE(victim > 0);
    ::kill(victim, SIGKILL);
    const auto rc = launch.wait_exit(60);
    INFO(launch.output());
    REQUIRE(rc);
    REQUIRE(*rc != 0);  // killed mid-run, not after the end
    CHECK_THAT(launch.output(), Catch::Contains("server 1 exited with code 137"));
    CHECK(test::processes_with(cfg).empty());
  }
  // At most the iterations since the last checkpoint every server completed are lost: server 1
  // wrote kill_after; the other server is at most one iteration behind it, so it completed the
  // checkpoint before (kill_after - every) at least, maybe kill_after too.
  // A worker writes its file after its last push of the iteration before, so a server may have
  // written one that a worker, stopped in between, has not.
  const uint64_t common = newest_common(dir + "/ckpt", !job.extra.empty());
  INFO("newest checkpoint every process has: iteration " << common);
  CHECK(common + kEvery >= uint64_t(job.kill_after));
  CHECK(common < uint64_t(job.iterations));

  test::Proc resume("resume", {test::bin("psrt-launch"), cfg, "--resume"});
  const auto rc = resume.wait_exit(180);
  INFO(resume.output());
  REQUIRE(rc == 0);
  CHECK_THAT(resume.output(), Catch::Contains("resuming from the checkpoint of iteration " +
                                              std::to_string(common)));
  const auto resumed = params(dir);
  for (int w = 0; w < kWorkers; ++w) {
    const auto& got = resumed[std::size_t(w)];
    INFO("worker " << w);
    REQUIRE(got.size() == reference[0].size());
    std::size_t differ = 0;  // bit for bit: memcmp, so that -0.0 vs 0.0 or NaNs would count too
    for (std::size_t i = 0; i < got.size(); ++i) {
      differ += std::memcmp(&got[i], &reference[0][i], sizeof(float)) != 0;
    }
    CHECK(differ == 0);
  }
}

}  // namespace

TEST_CASE("a server killed mid-run resumes from the last common checkpoint, bit-identical (MLP)",
          "[integration][issue17][checkpoint]") {
  kill_and_resume(kMlp);
}

TEST_CASE("with compression the workers' codec state is checkpointed too, bit-identical",
          "[integration][issue17][checkpoint]") {
  // Error feedback with momentum correction (top-k), and LACO's calibration and density schedule.
  Job topk = kMlp;
  topk.iterations = 300;
  topk.extra = "compression: {codec: topk, density: 0.05, momentum_correction: true}\n";
  kill_and_resume(topk);
  Job laco = kMlp;
  laco.iterations = 300;
  laco.extra =
      "compression: {codec: laco, density: 0.05, calibration_iters: 3, warmup_iters: 20, "
      "replies: dense}\n";  // compressed replies' codec state restarts (README, Checkpoints)
  kill_and_resume(laco);
}

TEST_CASE("a resumed vgg-small continues its dropout masks, bit-identical",
          "[integration][issue17][checkpoint]") {
  kill_and_resume(kVgg);
}

TEST_CASE("a truncated or foreign checkpoint is refused naming the file",
          "[integration][issue17][checkpoint]") {
  const std::string dir = test::temp_dir("ckpt-bad");
  const std::string cfg = job_config(dir, kMlp);
  // A real checkpoint of a short run, where server 1 cannot write iteration 10's: the run goes
  // on, and says at its end how many were lost.
  const std::string blocked = checkpoint_path(dir + "/ckpt", "ckpt", 1, 10) + ".tmp";
  std::filesystem::create_directories(blocked + "/x");
  test::Proc first("launch", {test::bin("psrt-launch"), cfg, "--set", "job.iterations=20"});
  REQUIRE(first.wait_exit(120) == 0);
  CHECK_THAT(first.output(), Catch::Contains("1 of 4 checkpoints could not be written"));
  std::filesystem::remove_all(blocked);
  // 5, 15, 20: from the failure on, no server removes a checkpoint (server/server_keep.cc).
  const auto files = list_checkpoints(dir + "/ckpt", "ckpt", 1);
  REQUIRE(files.size() == 3);
  const std::string newest = files.rbegin()->second;
  std::filesystem::resize_file(newest, std::filesystem::file_size(newest) - 7);
  for (const auto& [it, older] : files) {
    if (older != newest) std::filesystem::remove(older);
  }
  test::Proc server("server",
                    {test::bin("psrt-server"), "--config", cfg, "--rank", "1", "--resume"});
  CHECK(server.wait_exit(30) == 2);
  CHECK_THAT(server.output(), Catch::Contains(newest + " rejected: checksum mismatch"));

  // An intact file of this job copied under another job's name: its contents say whose it is.
  test::Proc again("launch", {test::bin("psrt-launch"), cfg, "--set", "job.iterations=10"});
  REQUIRE(again.wait_exit(120) == 0);
  const std::string copy = checkpoint_path(dir + "/ckpt", "other", 1, 10);
  std::filesystem::copy_file(list_checkpoints(dir + "/ckpt", "ckpt", 1).at(10), copy);
  test::Proc foreign("server", {test::bin("psrt-server"), "--config", cfg, "--rank", "1",
                                "--resume", "--set", "job.id=other"});
  CHECK(foreign.wait_exit(30) == 2);
  CHECK_THAT(foreign.output(), Catch::Contains(copy + " rejected: written by job 'ckpt'"));
  // Another optimizer: its state would be taken for this one's (SGD's momentum for Adam's first
  // moment, with no second moment: the server crashed).
  test::Proc adam("server", {test::bin("psrt-server"), "--config", cfg, "--rank", "1",
                             "--resume", "--set", "optimizer.type=adam"});
  CHECK(adam.wait_exit(30) == 2);
  CHECK_THAT(adam.output(), Catch::Contains(" rejected: its servers ran optimizer 'sgd', this "
                                            "job's run 'adam'"));
  // A folder the server cannot write in: refused at start, not one error line per checkpoint.
  // (Its write test's temporary file is blocked by a folder of that name: root writes anywhere.)
  const std::string probe_tmp = checkpoint_path(dir + "/ckpt", "ckpt", 1, 0) + ".probe.tmp";
  std::filesystem::create_directories(probe_tmp + "/x");
  test::Proc unwritable("server", {test::bin("psrt-server"), "--config", cfg, "--rank", "1"});
  CHECK(unwritable.wait_exit(30) == 2);
  CHECK_THAT(unwritable.output(), Catch::Contains("checkpoint.dir: cannot write in '" + dir +
                                                  "/ckpt'"));
  std::filesystem::remove_all(probe_tmp);
  // A fresh start (no --resume) removes old files only once the job has started: alone, server 1
  // gives up waiting for a coordinator it never heard from (a start-up error), removing nothing.
  test::Proc fresh("server", {test::bin("psrt-server"), "--config", cfg, "--rank", "1", "--set",
                              "job.id=other", "--set", "cluster.start_timeout_s=0.5"});
  CHECK(fresh.wait_exit(30) == 2);
  CHECK(std::filesystem::exists(copy));
  // A whole fresh job 'other' removes its own old files, and only those.
  test::Proc other("launch", {test::bin("psrt-launch"), cfg, "--set", "job.id=other", "--set",
                              "job.iterations=2"});
  CHECK(other.wait_exit(120) == 0);
  CHECK_FALSE(std::filesystem::exists(copy));
  CHECK(list_checkpoints(dir + "/ckpt", "ckpt", 1).size() == 2);  // job ckpt's two (5 and 10)
}

TEST_CASE("a checkpoint of an earlier format or another layout is refused at resume (exit 2)",
          "[integration][issue17][checkpoint]") {
  const std::string dir = test::temp_dir("ckpt-v1");
  const std::string cfg = job_config(dir, kMlp);
  test::Proc first("launch", {test::bin("psrt-launch"), cfg, "--set", "job.iterations=10"});
  REQUIRE(first.wait_exit(120) == 0);
  // Another layout of the model in chunks, seen once the membership says what the workers train:
  // a refusal like the others (exit 2), where it ended as a failed job (exit 1).
  test::Proc layout("resume", {test::bin("psrt-launch"), cfg, "--resume", "--set",
                               "scheduler.chunk_bytes=4096"});
  CHECK(layout.wait_exit(120) == 2);
  CHECK_THAT(layout.output(), Catch::Contains("this server's share of the model has"));
  // Fewer iterations than the checkpoint has: a setting too, refused (it ended as a failure).
  test::Proc shorter("resume", {test::bin("psrt-launch"), cfg, "--resume", "--set",
                                "job.iterations=3"});
  CHECK(shorter.wait_exit(120) == 2);
  CHECK_THAT(shorter.output(), Catch::Contains("the servers resumed iteration 10, but this job "
                                               "runs 3 iterations"));
  for (uint32_t s = 0; s < 2; ++s) {
    for (const auto& [it, path] : list_checkpoints(dir + "/ckpt", "ckpt", s)) {
      auto bytes = read_whole_file(path);
      REQUIRE(bytes);
      const auto v1 = test::as_version_1(*bytes);
      test::write_file(path, std::string(v1.begin(), v1.end()));
    }
  }
  test::Proc adam("resume", {test::bin("psrt-launch"), cfg, "--resume", "--set",
                             "optimizer.type=adam", "--set", "job.iterations=20"});
  const auto rc = adam.wait_exit(120);
  INFO(adam.output());
  CHECK(rc == 2);
  CHECK_THAT(adam.output(), Catch::Contains("holds SGD's momentum, this job's servers run "
                                            "optimizer 'adam'"));
  test::Proc sgd("resume", {test::bin("psrt-launch"), cfg, "--resume", "--set",
                            "job.iterations=20"});
  INFO(sgd.output());
  CHECK(sgd.wait_exit(120) == 0);
}

TEST_CASE("a corrupt worker checkpoint is refused naming it, and the job resumes from an older one",
          "[integration][issue17][checkpoint]") {
  const std::string dir = test::temp_dir("ckpt-wbad");
  Job job = kMlp;
  job.iterations = 20;
  job.extra = "compression: {codec: topk, density: 0.05}\n";
  const std::string cfg = job_config(dir, job);
  test::Proc first("launch", {test::bin("psrt-launch"), cfg});
  REQUIRE(first.wait_exit(120) == 0);
  // Servers keep 2 (15, 20), workers 2 more (5 to 20).
  REQUIRE(list_checkpoints(dir + "/ckpt", "ckpt", 0).size() == 2);
  const auto mine = list_checkpoint_files(dir + "/ckpt", "ckpt", "worker", 1);
  REQUIRE(mine.size() == 4);
  const std::string newest = mine.at(20);
  std::filesystem::resize_file(newest, std::filesystem::file_size(newest) - 3);
  test::Proc resume("resume", {test::bin("psrt-launch"), cfg, "--resume"});
  const auto rc = resume.wait_exit(120);
  INFO(resume.output());
  CHECK(rc == 0);
  CHECK_THAT(resume.output(), Catch::Contains(newest + " rejected: checksum mismatch"));
  CHECK_THAT(resume.output(), Catch::Contains("resuming from the checkpoint of iteration 15"));
}

namespace {

// Every checkpoint file of the job: servers' and workers'.
std::size_t checkpoint_files(const std::string& dir) {
  std::size_t n = 0;
  for (uint32_t s = 0; s < 2; ++s) n += list_checkpoints(dir, "ckpt", s).size();
  for (uint32_t w = 0; w < kWorkers; ++w) {
    n += list_checkpoint_files(dir, "ckpt", "worker", w).size();
  }
  return n;
}

// Daemons started by hand, the servers with `server_args`, the workers with `worker_arg` (if not
// empty): every one must end non-zero, server 0 saying `why`.
void refused_mix(const std::string& cfg, const std::vector<std::string>& server_args,
                 const std::string& worker_arg, const std::string& why) {
  std::vector<std::vector<std::string>> worker_args;
  if (!worker_arg.empty()) worker_args.assign(kWorkers, {worker_arg});
  test::Daemons d = test::start_daemons(cfg, 2, kWorkers, worker_args, server_args);
  for (std::size_t i = 0; i < d.procs.size(); ++i) {
    const auto rc = d.procs[i]->wait_exit(60);
    INFO(d.names[i] << ":\n" << d.procs[i]->output());
    CHECK((rc && *rc != 0));
  }
  INFO(d.procs[0]->output());
  CHECK_THAT(d.procs[0]->output(), Catch::Contains(why));
}

}  // namespace

TEST_CASE("processes that disagree on --resume are refused before any checkpoint is removed",
          "[integration][checkpoint]") {
  const std::string dir = test::temp_dir("ckpt-mix");
  Job job = kMlp;
  job.iterations = 10;
  job.extra = "compression: {codec: topk, density: 0.05}\n";
  const std::string cfg = job_config(dir, job);
  test::Proc first("launch", {test::bin("psrt-launch"), cfg});
  REQUIRE(first.wait_exit(120) == 0);
  const std::size_t files = checkpoint_files(dir + "/ckpt");
  REQUIRE(files == 2 * 2 + 2 * kWorkers);  // iterations 5 and 10, every process
  // The workers started fresh deleted their codec state before the coordinator refused the mix;
  // resuming ones beside fresh servers were not refused at all, their --resume ignored.
  refused_mix(cfg, {"--resume"}, "",
              "worker 0 was started without --resume, server 0 with it");
  CHECK(checkpoint_files(dir + "/ckpt") == files);
  refused_mix(cfg, {}, "--resume", "worker 0 was started with --resume, server 0 without it");
  CHECK(checkpoint_files(dir + "/ckpt") == files);

  // Another codec's state is not this one's: the workers restart theirs, saying why (it was
  // refused as "truncated", or loaded: top-k's residuals into Gradient Dropping).
  test::Proc laco("resume", {test::bin("psrt-launch"), cfg, "--resume", "--set",
                             "compression.codec=graddrop", "--set", "job.iterations=15"});
  const auto rc = laco.wait_exit(120);
  INFO(laco.output());
  CHECK(rc == 0);
  CHECK_THAT(laco.output(), Catch::Contains("written with compression.codec topk, this job's "
                                            "is graddrop"));
  CHECK_THAT(laco.output(), Catch::Contains("resuming from the checkpoint of iteration 10"));
  // compression.momentum_correction changed since: the saved state passes the registration's
  // checks but does not fit this run's; it restarts empty as for another codec, where the job
  // ended once the servers had loaded theirs.
  test::Proc corrected("resume", {test::bin("psrt-launch"), cfg, "--resume", "--set",
                                  "compression.codec=graddrop", "--set",
                                  "compression.momentum_correction=true", "--set",
                                  "job.iterations=20"});
  const auto corrected_rc = corrected.wait_exit(120);
  INFO(corrected.output());
  CHECK(corrected_rc == 0);
  CHECK_THAT(corrected.output(), Catch::Contains("compression state restarts empty"));
  CHECK_THAT(corrected.output(), Catch::Contains("resuming from the checkpoint of iteration 15"));

  // A fresh run without a codec removes the workers' old files too (a later --resume loaded
  // them, adding an earlier run's residuals to this one's parameters).
  test::Proc plain("launch", {test::bin("psrt-launch"), cfg, "--set", "compression.codec=none"});
  REQUIRE(plain.wait_exit(120) == 0);
  for (uint32_t w = 0; w < kWorkers; ++w) {
    CHECK(list_checkpoint_files(dir + "/ckpt", "ckpt", "worker", w).empty());
  }
  CHECK(list_checkpoints(dir + "/ckpt", "ckpt", 0).size() == 2);  // this run's
}

// Server 0 cannot write its checkpoints from iteration 20 on (a full disk), server 1 can: with
// checkpoint.keep 2 server 1 pruned iteration 10, the last one both had, and the job could not
// resume though it had exited 0. From the first failure on every process keeps all its files.
TEST_CASE("a server that cannot write its checkpoints leaves the job one every server has",
          "[integration][checkpoint]") {
  const std::string dir = test::temp_dir("ckpt-keep");
  Job job = kMlp;
  job.iterations = 40;
  job.extra = "compression: {codec: topk, density: 0.05}\n";  // the workers' files too
  const std::string cfg = job_config(dir, job);
  for (uint64_t it : {20, 30, 40}) {
    std::filesystem::create_directories(checkpoint_path(dir + "/ckpt", "ckpt", 0, it) + ".tmp/x");
  }
  test::Proc first("launch", {test::bin("psrt-launch"), cfg, "--set", "checkpoint.every=10"});
  REQUIRE(first.wait_exit(120) == 0);
  INFO(first.output());
  CHECK_THAT(first.output(), Catch::Contains("server 0 could not write a checkpoint: every "
                                             "process keeps all its checkpoints"));
  CHECK(list_checkpoints(dir + "/ckpt", "ckpt", 1).count(10) == 1);
  for (uint64_t it : {20, 30, 40}) {
    std::filesystem::remove_all(checkpoint_path(dir + "/ckpt", "ckpt", 0, it) + ".tmp");
  }
  test::Proc resume("resume", {test::bin("psrt-launch"), cfg, "--resume", "--set",
                               "checkpoint.every=10"});
  const auto rc = resume.wait_exit(120);
  INFO(resume.output());
  CHECK(rc == 0);
  CHECK_THAT(resume.output(), Catch::Contains("resuming from the checkpoint of iteration 10"));
}
