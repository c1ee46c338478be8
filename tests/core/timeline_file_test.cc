// The timeline's file: written while the run goes on (bounded memory, something left after a
// kill), finished by a rename, taken up again by a later flush, and given up on a failed write.
#include "core/timeline.h"

#include <catch2/catch.hpp>

#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

using namespace psrt;
namespace fs = std::filesystem;

namespace {

std::string temp_folder() {
  std::string tmpl = (fs::temp_directory_path() / "psrt-timeline-XXXXXX").string();
  REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
  return tmpl;
}

// Event lines ("{"ph":...") naming `name` in the file at `path`.
int events_named(const std::string& path, const std::string& name) {
  std::ifstream in(path);
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("{\"ph\":", 0) == 0 && line.find("\"name\":\"" + name + "\"") != line.npos) ++n;
  }
  return n;
}

bool parses(const std::string& path) {
  return std::system(("/usr/bin/python3 -m json.tool " + path + " > /dev/null").c_str()) == 0;
}

// Waits up to 30 s for `done`.
template <typename Fn>
bool eventually(Fn done) {
  for (int i = 0; i < 300 && !done(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  return done();
}

// A file-size limit on this process for the guard's life, as a disk that fills: a write past it
// fails (EFBIG; SIGXFSZ ignored meanwhile); the old limit and handler come back at the end.
class FileSizeLimit {
 public:
  FileSizeLimit() : old_handler_(::signal(SIGXFSZ, SIG_IGN)) {
    REQUIRE(::getrlimit(RLIMIT_FSIZE, &old_) == 0);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &old_);
    ::signal(SIGXFSZ, old_handler_);
  }
  void set(uintmax_t bytes) {
    struct rlimit small = old_;
    small.rlim_cur = bytes;
    REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
  }

 private:
  struct rlimit old_ {};
  sighandler_t old_handler_;
};

void spans(Timeline& tl, const std::string& name, int n) {
  const auto now = Timeline::Clock::now();
  for (int i = 0; i < n; ++i) tl.span(Timeline::kCompute, "forward", name, now, now);
}

}  // namespace

TEST_CASE("a timeline writes its events as the run goes and finishes its file by a rename") {
  const std::string dir = temp_folder();
  const std::string file = dir + "/worker-0.json";
  {
    Timeline tl(dir, "worker-0", 1000);
    spans(tl, "early", 20000);  // about 2.6 MB: written before any flush
    CHECK(eventually([&] { return events_named(file + ".part", "early") == 20000; }));
    CHECK_FALSE(fs::exists(file));  // only a finished trace has the final name
    tl.flush();
    CHECK_FALSE(fs::exists(file + ".part"));
    CHECK(events_named(file, "early") == 20000);
    CHECK(parses(file));
    spans(tl, "late", 3);  // after a flush: the destructor takes the file up again
  }
  CHECK(events_named(file, "early") == 20000);
  CHECK(events_named(file, "late") == 3);
  CHECK(events_named(file, "process_name") == 1);
  CHECK(parses(file));
  CHECK_FALSE(fs::exists(file + ".part"));
  fs::remove_all(dir);
}

TEST_CASE("a timeline whose write fails says so, leaves no file and the process carries on") {
  const std::string dir = temp_folder();
  const std::string file = dir + "/server-0.json";
  {
    FileSizeLimit limit;
    limit.set(64 * 1024);  // as a disk that fills
    Timeline tl(dir, "server-0", 1);
    spans(tl, "step", 20000);
    CHECK(eventually([&] { return !fs::exists(file + ".part"); }));  // given up, removed
    spans(tl, "after", 10);                                          // dropped
    tl.flush();
    CHECK_FALSE(fs::exists(file));
  }
  CHECK_FALSE(fs::exists(file));
  CHECK_FALSE(fs::exists(file + ".part"));
  fs::remove_all(dir);
}

TEST_CASE("a second writer of one trace name writes a file of its own, and an earlier run's goes") {
  // Two jobs sharing a timeline folder wrote into one NAME.json.part; a new run's unfinished
  // trace beside an earlier run's finished one was what psrt-timeline merge read.
  const std::string dir = temp_folder();
  const std::string file = dir + "/server-0.json";
  { std::ofstream(file) << "an earlier run's trace\n"; }
  fs::permissions(file, fs::perms::owner_read | fs::perms::owner_write);
  {
    Timeline first(dir, "server-0", 1);
    CHECK_FALSE(fs::exists(file));  // gone with the new run's start
    Timeline second(dir, "server-0", 1);
    CHECK(second.path() == dir + "/server-0-" + std::to_string(::getpid()) + ".json");
    spans(first, "mine", 3);
    spans(second, "theirs", 5);
  }
  CHECK(events_named(file, "mine") == 3);
  CHECK(events_named(file, "theirs") == 0);
  CHECK(events_named(dir + "/server-0-" + std::to_string(::getpid()) + ".json", "theirs") == 5);
  CHECK(parses(file));
  CHECK((fs::status(file).permissions() & fs::perms::all) ==
        (fs::perms::owner_read | fs::perms::owner_write));  // the replaced file's mode
  fs::remove_all(dir);
}

TEST_CASE("a trace finished once keeps what it had when adding to it fails") {
  const std::string dir = temp_folder();
  const std::string file = dir + "/worker-1.json";
  {
    FileSizeLimit limit;
    Timeline tl(dir, "worker-1", 1001);
    spans(tl, "early", 100);
    tl.flush();
    REQUIRE(events_named(file, "early") == 100);
    limit.set(fs::file_size(file) + 4096);  // the disk fills after the first flush
    spans(tl, "late", 20000);
  }  // the destructor's flush fails: the file was deleted with it
  CHECK(events_named(file, "early") == 100);
  CHECK(events_named(file, "late") == 0);
  CHECK(parses(file));
  CHECK_FALSE(fs::exists(file + ".part"));
  fs::remove_all(dir);
}

TEST_CASE("a FIFO where the part file goes is refused at once") {
  // The daemon blocked in open() until the job's start deadline blamed it as never come.
  const std::string dir = temp_folder();
  REQUIRE(::mkfifo((dir + "/worker-0.json.part").c_str(), 0600) == 0);
  Timeline tl(dir, "worker-0", 1000);
  CHECK_FALSE(tl.enabled());
  spans(tl, "dropped", 3);
  tl.flush();
  CHECK_FALSE(fs::exists(dir + "/worker-0.json"));
  fs::remove_all(dir);
}
