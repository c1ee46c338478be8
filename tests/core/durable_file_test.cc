// write_durably: whole files or none, through links, never over what is not a file, and two
// writers of one path each whole.
#include "core/durable_file.h"

#include <catch2/catch.hpp>

#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using namespace psrt;
namespace fs = std::filesystem;

namespace {

std::string temp_folder() {
  std::string tmpl = (fs::temp_directory_path() / "psrt-durable-XXXXXX").string();
  REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
  return tmpl;
}

std::string contents(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

Status write_text(const std::string& path, const std::string& text) {
  return write_durably(path, std::span<const uint8_t>(
                                 reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

}  // namespace

TEST_CASE("write_durably writes through a link and refuses what is not a regular file",
          "[core]") {
  const std::string dir = temp_folder();
  // A link: its target is written (the rename replaced the link and left the target as it was).
  std::ofstream(dir + "/real.bin") << "old";
  fs::create_symlink(dir + "/real.bin", dir + "/link.bin");
  REQUIRE(write_text(dir + "/link.bin", "new").is_ok());
  CHECK(fs::is_symlink(dir + "/link.bin"));
  CHECK(contents(dir + "/real.bin") == "new");
  // A link whose target does not exist yet: the target is made (the link was replaced).
  fs::create_symlink("new.bin", dir + "/dangling.bin");
  REQUIRE(write_text(dir + "/dangling.bin", "made").is_ok());
  CHECK(fs::is_symlink(dir + "/dangling.bin"));
  CHECK(contents(dir + "/new.bin") == "made");
  // The file replaced keeps its permissions (a private dump became readable by all).
  fs::permissions(dir + "/real.bin", fs::perms::owner_read | fs::perms::owner_write);
  REQUIRE(write_text(dir + "/real.bin", "private").is_ok());
  CHECK(fs::status(dir + "/real.bin").permissions() ==
        (fs::perms::owner_read | fs::perms::owner_write));
  // A FIFO (or a device such as /dev/full): refused, and still there (it was replaced by a file).
  REQUIRE(::mkfifo((dir + "/fifo").c_str(), 0600) == 0);
  const Status st = write_text(dir + "/fifo", "x");
  CHECK_FALSE(st.is_ok());
  CHECK_THAT(st.message(), Catch::Contains("not a regular file"));
  CHECK(fs::is_fifo(dir + "/fifo"));
  fs::remove_all(dir);
}

TEST_CASE("two writers of one path each write a whole file", "[core]") {
  const std::string dir = temp_folder();
  const std::string path = dir + "/params.bin";
  // Another writer's temporary file, mid-write: it was truncated, written into and then removed
  // by this writer (two workers given one job.dump_params).
  std::ofstream(path + ".tmp") << "the other writer's";
  REQUIRE(write_text(path, "mine").is_ok());
  CHECK(contents(path) == "mine");
  CHECK(contents(path + ".tmp") == "the other writer's");
  // A folder in the temporary file's place is an error, as a full disk is.
  fs::remove(path + ".tmp");
  fs::create_directories(path + ".tmp/x");
  CHECK_FALSE(write_text(path, "again").is_ok());
  CHECK(contents(path) == "mine");
  fs::remove_all(dir);
}

TEST_CASE("follow_links follows a chain to a target not there yet and names a loop", "[core]") {
  const std::string dir = temp_folder();
  fs::create_symlink("b", dir + "/a");
  fs::create_symlink(dir + "/c", dir + "/b");
  const auto target = follow_links(dir + "/a");
  REQUIRE(target);
  CHECK(fs::path(*target) == fs::path(dir) / "c");
  CHECK(*follow_links(dir + "/plain") == dir + "/plain");
  fs::create_symlink("loop2", dir + "/loop1");
  fs::create_symlink("loop1", dir + "/loop2");
  const auto loop = follow_links(dir + "/loop1");
  CHECK_FALSE(loop);
  CHECK_THAT(loop.status().message(), Catch::Contains("too many levels of symbolic links"));
  fs::remove_all(dir);
}

TEST_CASE("make_folder makes a folder through a link to one not made yet", "[core]") {
  // create_directories on such a link failed with "File exists" (a checkpoint.dir or timeline
  // folder given as a link to a scratch disk's folder).
  const std::string dir = temp_folder();
  fs::create_symlink(dir + "/scratch/run", dir + "/ckpt");
  CHECK_FALSE(make_folder(dir + "/ckpt"));
  CHECK(fs::is_directory(dir + "/scratch/run"));
  CHECK(fs::is_symlink(dir + "/ckpt"));
  CHECK_FALSE(make_folder(dir + "/ckpt"));  // there already
  std::ofstream(dir + "/file") << "x";
  CHECK(make_folder(dir + "/file/sub"));  // a file in the way
  fs::remove_all(dir);
}

TEST_CASE("remove_unfinished_checkpoints removes this rank's dead writes and nothing else",
          "[core]") {
  // A server killed while writing left NAME.ckpt.tmp: no fresh start, resume or prune removed it.
  const std::string dir = temp_folder();
  const std::string done = checkpoint_file(dir, "job", "server", 1, 200);
  const std::vector<std::string> dead{done + ".tmp", checkpoint_file(dir, "job", "server", 1, 300) +
                                                         ".tmp.123.0"};
  const std::vector<std::string> others{
      done, checkpoint_file(dir, "job", "server", 0, 200) + ".tmp",  // another rank's
      checkpoint_file(dir, "job", "worker", 1, 200) + ".tmp",        // another role's
      checkpoint_file(dir, "job2", "server", 1, 200) + ".tmp",       // another job's
      done + ".tmpx", dir + "/notes.ckpt.tmp"};
  for (const auto& f : dead) std::ofstream(f) << "half";
  for (const auto& f : others) std::ofstream(f) << "keep";
  CHECK(remove_unfinished_checkpoints(dir, "job", "server", 1) == dead.size());
  for (const auto& f : dead) CHECK_FALSE(fs::exists(f));
  for (const auto& f : others) CHECK(fs::exists(f));
  CHECK(remove_unfinished_checkpoints(dir + "/missing", "job", "server", 1) == 0);
  fs::remove_all(dir);
}

// A 1 GB file named like a checkpoint was read whole, byte by byte, before its 8-byte header was
// looked at (21 s and 1 GB of memory before the server listened); a FIFO blocked the open.
TEST_CASE("read_whole_file reads no further than a header that is not the magic", "[core]") {
  const std::string dir = temp_folder();
  const std::string big = dir + "/big.ckpt";
  std::ofstream(big) << "NOTMAGIC";
  fs::resize_file(big, 64 << 20);  // sparse
  auto head = read_whole_file(big, "PSRTCKPT");
  REQUIRE(head);
  CHECK(head->size() == 8);
  CHECK(std::string(head->begin(), head->end()) == "NOTMAGIC");
  std::ofstream(dir + "/good.ckpt") << "PSRTCKPT and the rest";
  auto whole = read_whole_file(dir + "/good.ckpt", "PSRTCKPT");
  REQUIRE(whole);
  CHECK(std::string(whole->begin(), whole->end()) == "PSRTCKPT and the rest");
  std::ofstream(dir + "/short.ckpt") << "PSR";
  CHECK(read_whole_file(dir + "/short.ckpt", "PSRTCKPT")->size() == 3);
  auto plain = read_whole_file(big);  // no magic: all of it
  REQUIRE(plain);
  CHECK(plain->size() == std::size_t(64) << 20);
  REQUIRE(::mkfifo((dir + "/fifo.ckpt").c_str(), 0600) == 0);
  const auto fifo = read_whole_file(dir + "/fifo.ckpt", "PSRTCKPT");
  REQUIRE_FALSE(fifo);
  CHECK_THAT(fifo.status().message(), Catch::Contains("not a regular file"));
  CHECK_THAT(read_whole_file(dir + "/none").status().message(),
             Catch::Contains("No such file or directory"));
  fs::remove_all(dir);
}
