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
#include "tests/integration/checkpoint_job.h"
#include "tests/integration/proc_util.h"
#include "tests/server/checkpoint_v1.h"

using namespace psrt;
using namespace psrt::test::ckpt;

namespace {

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

TEST_CASE("a corrupt worker checkpoint is refused naming it, and the job resumes from an older one",
          "[integration][issue17][checkpoint]") {
  const std::string dir = test::temp_dir("ckpt-wbad");
  Job job = kMlp;
  job.iterations = 20;
  job.extra = "compression: {codec: topk, density: 0.05}\n";
  const std::string cfg = job_config(dir, job);
  test::Proc first("launch", {test::bin("psrt-launch"), cfg});
  REQUIRE(first.wait_exit(120) == 0);
  // Servers keep the four newest of checkpoint.every (5 to 20), workers keep + 2 (5 to 20).
  REQUIRE(list_checkpoints(dir + "/ckpt", "ckpt", 0).size() == 4);
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
  const Outcome laco = resume_with(cfg, {"compression.codec=graddrop", "job.iterations=15"});
  INFO(laco.output);
  CHECK(laco.rc == 0);
  CHECK_THAT(laco.output, Catch::Contains("written with compression.codec topk, this job's "
                                          "is graddrop"));
  CHECK_THAT(laco.output, Catch::Contains("resuming from the checkpoint of iteration 10"));
  // compression.momentum_correction changed since: the saved state passes the registration's
  // checks but does not fit this run's; it restarts empty as for another codec, where the job
  // ended once the servers had loaded theirs.
  const Outcome corrected = resume_with(cfg, {"compression.codec=graddrop",
                                              "compression.momentum_correction=true",
                                              "job.iterations=20"});
  INFO(corrected.output);
  CHECK(corrected.rc == 0);
  CHECK_THAT(corrected.output, Catch::Contains("compression state restarts empty"));
  CHECK_THAT(corrected.output, Catch::Contains("resuming from the checkpoint of iteration 15"));

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

TEST_CASE("a job with servers that hold no chunk resumes, bit-identical",
          "[integration][checkpoint]") {
  // Such a server writes no checkpoint: --resume found no iteration common to every server.
  Job job = kMlp;
  job.model = "{backend: native, arch: mlp, hidden: []}";  // 2 tensors for 8 servers
  job.iterations = 2 * kEvery;
  const std::string whole = test::temp_dir("ckpt-empty-whole");
  test::Proc ref("whole", {test::bin("psrt-launch"), job_config(whole, job), "--set",
                           "cluster.servers=8"});
  REQUIRE(ref.wait_exit(120) == 0);
  CHECK_THAT(ref.output(), Catch::Contains("this server holds no chunk of the model (8 servers "
                                           "for 2 tensors)"));
  const std::string dir = test::temp_dir("ckpt-empty");
  job.iterations = kEvery + 2;
  const std::string cfg = job_config(dir, job);
  test::Proc first("first", {test::bin("psrt-launch"), cfg, "--set", "cluster.servers=8"});
  REQUIRE(first.wait_exit(120) == 0);
  const Outcome resumed = resume_with(
      cfg, {"cluster.servers=8", "job.iterations=" + std::to_string(2 * kEvery)});
  INFO(resumed.output);
  REQUIRE(resumed.rc == 0);
  CHECK_THAT(resumed.output, Catch::Contains("(iteration " + std::to_string(kEvery) + ")"));
  for (int w = 0; w < kWorkers; ++w) {  // byte for byte
    const std::string file = "/params-" + std::to_string(w) + ".bin";
    const auto got = read_whole_file(dir + file), want = read_whole_file(whole + file);
    REQUIRE(got);
    REQUIRE(want);
    CHECK(*got == *want);
  }
}
