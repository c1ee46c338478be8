// Test helpers around real processes: start a daemon, wait for a line or an exit with a deadline
// (core/process.h: poll on its pipes, never sleep), collect everything it printed.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/process.h"

namespace psrt::test {

class Proc {
 public:
  // SIGINT at its default, as from a terminal, whatever the test runner ignores (a psrt-launch
  // that inherits it ignored keeps ignoring it).
  Proc(std::string name, std::vector<std::string> argv);
  // Reads output until a line containing `text` appears; false at the deadline or exit.
  bool wait_line(const std::string& text, double seconds);
  // Waits for the process to exit (reading its output); nullopt at the deadline.
  std::optional<int> wait_exit(double seconds);
  void kill(int sig);
  const std::string& output() const { return output_; }
  Process& child() { return *child_; }

 private:
  void take(const std::string& line) { output_ += line + "\n"; }

  std::unique_ptr<Process> child_;
  std::string output_;
};

// Processes whose command line mentions `needle` (a job's unique config path), psrt-launch
// itself excepted, with their command lines.
std::vector<std::pair<pid_t, std::string>> processes_with(const std::string& needle);
// The pid of `program` (psrt-server, psrt-worker) with `--rank rank` among those; 0 if none.
pid_t daemon_pid(const std::string& needle, const std::string& program, int rank);

// A job's daemons started by hand: psrt-server 0 on an OS-chosen coordinator port, then, once it
// listens, servers 1 .. servers-1 and workers 0 .. workers-1 against it, all with `cfg`.
// procs and names in that order; endpoint is empty (and only server 0 runs) if it never listened;
// started: server 0 passed the start barrier (within 30 s). `worker_args` adds arguments to
// worker w's command line (worker_args[w], where there is one: e.g. "--set", "key=value");
// `server_args` to every server's.
struct Daemons {
  std::vector<std::unique_ptr<Proc>> procs;
  std::vector<std::string> names;
  std::string endpoint;
  bool started = false;
};
Daemons start_daemons(const std::string& cfg, int servers, int workers,
                      const std::vector<std::vector<std::string>>& worker_args = {},
                      const std::vector<std::string>& server_args = {});
// Non-empty lines in `s`.
std::size_t count_lines(const std::string& s);

std::string bin(const std::string& name);     // path of a built program
std::string source(const std::string& path);  // path inside the source tree
std::string temp_dir(const std::string& tag);  // a fresh directory under /tmp
void write_file(const std::string& path, const std::string& text);
// A file of raw fp32 values (what job.dump_params writes); empty if it cannot be read.
std::vector<float> read_floats(const std::string& path);
// The largest absolute difference of two parameter dumps; infinity when their sizes differ.
float max_difference(const std::vector<float>& a, const std::vector<float>& b);

}  // namespace psrt::test
