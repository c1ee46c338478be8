#include "server/checkpoint_file.h"
#include "server/checkpoint_writer.h"
#include "tests/server/checkpoint_v1.h"

#include <catch2/catch.hpp>

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using namespace psrt;

namespace {

// A new folder under /tmp named after `tag`.
std::string temp_folder(const std::string& tag) {
  std::string tmpl = "/tmp/psrt-ckpt-" + tag + "-XXXXXX";
  REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
  return tmpl;
}

ShardSnapshot sample() {
  ShardSnapshot s{"job-a", 1, 2, 3, 40, {}, "adam"};
  for (uint32_t k = 0; k < 3; ++k) {
    ChunkSnapshot c;
    c.key = k;
    c.offset = 1024u * k;
    c.length = 5 + k;
    c.iteration = 40;
    for (uint32_t i = 0; i < c.length; ++i) c.params.push_back(float(k) + 0.25f * float(i));
    c.opt.step = 40;
    c.opt.m.assign(c.length, -0.5f);
    if (k == 1) c.opt.v.assign(c.length, 1e-3f);
    if (k == 2) c.published = c.params;
    s.chunks.push_back(c);
  }
  return s;
}

void require_equal(const ShardSnapshot& a, const ShardSnapshot& b) {
  REQUIRE(a.job_id == b.job_id);
  REQUIRE(a.rank == b.rank);
  REQUIRE(a.servers == b.servers);
  REQUIRE(a.workers == b.workers);
  REQUIRE(a.iteration == b.iteration);
  REQUIRE(a.optimizer == b.optimizer);
  REQUIRE(a.chunks.size() == b.chunks.size());
  for (std::size_t i = 0; i < a.chunks.size(); ++i) {
    const auto &x = a.chunks[i], &y = b.chunks[i];
    CHECK(x.key == y.key);
    CHECK(x.offset == y.offset);
    CHECK(x.length == y.length);
    CHECK(x.iteration == y.iteration);
    CHECK(x.params == y.params);
    CHECK(x.opt.m == y.opt.m);
    CHECK(x.opt.v == y.opt.v);
    CHECK(x.opt.step == y.opt.step);
    CHECK(x.published == y.published);
  }
}

// Server 0's checkpoints of `iterations`, written in turn by a writer with keep 2 and
// checkpoint.every `every`: the iterations left in `dir`.
std::vector<uint64_t> write_and_keep(const std::string& dir, uint64_t every,
                                     const std::vector<uint64_t>& iterations) {
  auto s = sample();
  {
    CheckpointWriter writer(dir, "job-a", 0, 2, {}, every);
    for (uint64_t it : iterations) {
      s.iteration = it;
      writer.submit(checkpoint_path(dir, "job-a", 0, it), s);
      writer.drain();
    }
  }
  std::vector<uint64_t> left;
  for (const auto& [it, path] : list_checkpoints(dir, "job-a", 0)) left.push_back(it);
  return left;
}

}  // namespace

TEST_CASE("a checkpoint round-trips through its encoding", "[unit][checkpoint]") {
  const auto s = sample();
  auto back = decode_checkpoint(encode_checkpoint(s), "x.ckpt");
  REQUIRE(back);
  require_equal(*back, s);
}

TEST_CASE("every truncation and every flipped byte of a checkpoint is rejected",
          "[unit][checkpoint]") {
  const auto bytes = encode_checkpoint(sample());
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    auto cut = std::vector<uint8_t>(bytes.begin(), bytes.begin() + std::ptrdiff_t(n));
    auto r = decode_checkpoint(cut, "cut.ckpt");
    REQUIRE_FALSE(r);
    REQUIRE_THAT(r.status().message(), Catch::StartsWith("checkpoint cut.ckpt rejected: "));
  }
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    auto bad = bytes;
    bad[i] ^= 0x10;
    REQUIRE_FALSE(decode_checkpoint(bad, "flip.ckpt"));
  }
  auto longer = bytes;
  longer.push_back(0);
  CHECK_FALSE(decode_checkpoint(longer, "long.ckpt"));
}

TEST_CASE("a checkpoint of another format version or no checkpoint at all is named as such",
          "[unit][checkpoint]") {
  auto bytes = encode_checkpoint(sample());
  bytes[8] = 9;  // the version field follows the 8-byte magic
  auto r = decode_checkpoint(bytes, "v.ckpt");
  REQUIRE_FALSE(r);
  CHECK_THAT(r.status().message(), Catch::Contains("format version 9, this build reads version 2"));
  const std::string text = "cluster: {servers: 2}\n";
  r = decode_checkpoint(std::vector<uint8_t>(text.begin(), text.end()), "job.yaml");
  REQUIRE_FALSE(r);
  CHECK_THAT(r.status().message(), Catch::Contains("job.yaml rejected: not a psrt checkpoint"));
}

TEST_CASE("a version-1 checkpoint (no optimizer name) is still read", "[unit][checkpoint]") {
  auto s = sample();
  const auto v1 = test::as_version_1(encode_checkpoint(s));
  REQUIRE(v1.size() == encode_checkpoint(s).size() - 4 - s.optimizer.size());
  auto back = decode_checkpoint(v1, "v1.ckpt");
  REQUIRE(back);
  s.optimizer.clear();  // unknown: restore checks the state's shape instead
  require_equal(*back, s);
}

TEST_CASE("checkpoint files are written atomically and listed by iteration", "[unit][checkpoint]") {
  const std::string dir = temp_folder("unit");
  auto s = sample();
  for (uint64_t it : {40u, 7u, 120u}) {
    s.iteration = it;
    REQUIRE(write_checkpoint(checkpoint_path(dir, "job-a", 1, it), s));
  }
  CHECK(checkpoint_path(dir, "job-a", 1, 40) == dir + "/job-a-server-1-000000000040.ckpt");
  CHECK_THAT(checkpoint_path(dir, "a/b c", 0, 7),
             Catch::StartsWith(dir + "/a_b_c~") &&
                 Catch::EndsWith("-server-0-000000000007.ckpt"));
  // Ids that differ only in replaced bytes get names of their own: a fresh start of 'team_a'
  // once deleted the files of 'team+a' in the same folder.
  CHECK(checkpoint_path(dir, "team+a", 0, 7) != checkpoint_path(dir, "team_a", 0, 7));
  CHECK(checkpoint_path(dir, "team+a", 0, 7) != checkpoint_path(dir, "team=a", 0, 7));
  REQUIRE(write_checkpoint(checkpoint_path(dir, "team+a", 0, 7), s));
  CHECK(list_checkpoints(dir, "team_a", 0).empty());
  CHECK(list_checkpoints(dir, "team+a", 0).size() == 1);
  std::ofstream(dir + "/job-a-server-10-000000000040.ckpt") << "other rank";
  std::ofstream(dir + "/job-b-server-1-000000000040.ckpt") << "other job";
  std::ofstream(dir + "/job-a-server-1-000000000050.ckpt.tmp") << "a write that never finished";
  const auto files = list_checkpoints(dir, "job-a", 1);
  REQUIRE(files.size() == 3);
  CHECK(files.begin()->first == 7);
  CHECK(files.rbegin()->first == 120);
  auto back = read_checkpoint(files.at(120));
  REQUIRE(back);
  require_equal(*back, s);
  auto missing = read_checkpoint(dir + "/nothing.ckpt");
  REQUIRE_FALSE(missing);
  CHECK_THAT(missing.status().message(), Catch::Contains(dir + "/nothing.ckpt"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("the checkpoint writer writes off the caller's thread and drops none",
          "[unit][checkpoint]") {
  const std::string dir = temp_folder("writer");
  auto s = sample();
  {
    CheckpointWriter writer(dir, "job-a", 1, 2);
    s.iteration = 10;
    writer.submit(checkpoint_path(dir, "job-a", 1, 10), s);
    writer.drain();
    CHECK(writer.written() == 1);
    auto back = read_checkpoint(checkpoint_path(dir, "job-a", 1, 10));
    REQUIRE(back);
    require_equal(*back, s);
    // A burst faster than the disk: each one is written (submit waits when one is queued).
    for (uint64_t it : {20u, 30u, 40u, 50u}) {
      s.iteration = it;
      writer.submit(checkpoint_path(dir, "job-a", 1, it), s);
    }
    writer.drain();
    CHECK(writer.written() == 5);
  }
  const auto files = list_checkpoints(dir, "job-a", 1);
  REQUIRE(files.size() == 2);  // checkpoint.keep
  CHECK(files.rbegin()->first == 50);
  auto newest = read_checkpoint(files.rbegin()->second);
  REQUIRE(newest);
  require_equal(*newest, s);
  {  // the folder removed while the job runs is made again (every later write failed)
    CheckpointWriter writer(dir, "job-a", 1, 2);
    std::filesystem::remove_all(dir);
    s.iteration = 60;
    writer.submit(checkpoint_path(dir, "job-a", 1, 60), s);
    writer.drain();
    CHECK(writer.written() == 1);
    CHECK(list_checkpoints(dir, "job-a", 1).size() == 1);
  }
  // A folder that cannot be written to: an error in the log, not a crash or a hang.
  {
    CheckpointWriter writer("/proc/psrt-no-such-dir", "job-a", 1, 2);
    writer.submit("/proc/psrt-no-such-dir/x.ckpt", s);
    writer.drain();
    CHECK(writer.written() == 0);
  }
  std::filesystem::remove_all(dir);
}

// checkpoint.every_s writes on each server's own clock, checkpoint.every where every process
// writes (the workers' codec state too): pruning to `keep` keeps the newest of the latter as well,
// or a job with both could be left with no iteration in common.
TEST_CASE("pruning keeps the newest checkpoint of checkpoint.every beside the keep newest",
          "[unit][checkpoint]") {
  const std::string dir = temp_folder("keep");
  const auto left = write_and_keep(dir, 20, {20, 33, 40, 45, 51});
  CHECK(left == std::vector<uint64_t>{20, 40, 45, 51});  // the 4 newest multiples of 20 stay
  // Without checkpoint.every, the keep newest only; with it among them, nothing more.
  std::map<uint64_t, std::string> files = list_checkpoints(dir, "job-a", 0);
  keep_newest_checkpoints(files, 2, 45);
  CHECK(list_checkpoints(dir, "job-a", 0).size() == 2);
  keep_newest_checkpoints(list_checkpoints(dir, "job-a", 0), 1);
  CHECK(list_checkpoints(dir, "job-a", 0).begin()->first == 51);
  std::filesystem::remove_all(dir);
}

TEST_CASE("pruning keeps what a server whose disk runs three checkpoints behind still shares",
          "[unit][checkpoint]") {
  // A server's writer lags its training by up to three of checkpoint.every (one being written,
  // one queued, one iteration between servers). With keep 2, a fast server kept {300, 400}
  // while a slow disk's had {100, 200}: --resume found no common checkpoint.
  const std::string dir = temp_folder("lag");
  const auto left = write_and_keep(dir, 100, {100, 200, 300, 400, 500, 600, 700, 800});
  // The slow one, at 800 too, has written at least 500.
  CHECK(left == std::vector<uint64_t>{500, 600, 700, 800});
  std::filesystem::remove_all(dir);
}
