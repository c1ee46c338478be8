// Checkpoints that cannot be taken up: truncated, foreign, of an earlier format or another
// optimizer, of another layout of the model, or ahead of the job's iterations. Each is refused
// naming the file and the reason (exit 2), before any file is removed.
#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <string>

#include "core/durable_file.h"
#include "server/checkpoint_file.h"
#include "tests/integration/checkpoint_job.h"
#include "tests/integration/proc_util.h"
#include "tests/server/checkpoint_v1.h"

using namespace psrt;
using namespace psrt::test::ckpt;

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
  const Outcome layout = resume_with(cfg, {"scheduler.chunk_bytes=4096"});
  INFO(layout.output);
  CHECK(layout.rc == 2);
  CHECK_THAT(layout.output, Catch::Contains("this server's share of the model has"));
  // Fewer iterations than the checkpoint has: a setting too, refused (it ended as a failure).
  const Outcome shorter = resume_with(cfg, {"job.iterations=3"});
  INFO(shorter.output);
  CHECK(shorter.rc == 2);
  CHECK_THAT(shorter.output, Catch::Contains("the servers resumed iteration 10, but this job "
                                             "runs 3 iterations"));
  for (uint32_t s = 0; s < 2; ++s) {
    for (const auto& [it, path] : list_checkpoints(dir + "/ckpt", "ckpt", s)) {
      auto bytes = read_whole_file(path);
      REQUIRE(bytes);
      const auto v1 = test::as_version_1(*bytes);
      test::write_file(path, std::string(v1.begin(), v1.end()));
    }
  }
  const Outcome adam = resume_with(cfg, {"optimizer.type=adam", "job.iterations=20"});
  INFO(adam.output);
  CHECK(adam.rc == 2);
  CHECK_THAT(adam.output, Catch::Contains("holds SGD's momentum, this job's servers run "
                                          "optimizer 'adam'"));
  const Outcome sgd = resume_with(cfg, {"job.iterations=20"});
  INFO(sgd.output);
  CHECK(sgd.rc == 0);
}

TEST_CASE("a checkpoint.dir that is a link to a folder not made yet is made and written",
          "[integration][checkpoint]") {
  // create_directories on the link failed with "File exists": the job was refused.
  const std::string dir = test::temp_dir("ckpt-link");
  std::filesystem::create_symlink("real-ckpt", dir + "/ckpt");
  Job job = kMlp;
  job.iterations = 5;
  const std::string cfg = job_config(dir, job);
  test::Proc launch("launch", {test::bin("psrt-launch"), cfg});
  const auto rc = launch.wait_exit(120);
  INFO(launch.output());
  CHECK(rc == 0);
  CHECK(std::filesystem::is_symlink(dir + "/ckpt"));
  CHECK(list_checkpoints(dir + "/real-ckpt", "ckpt", 0).size() == 1);
}
