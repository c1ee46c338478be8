// Test helpers around real processes: start a daemon, wait for a line or an exit with a deadline
// (poll on its pipes, never sleep), collect everything it printed.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tools/launch/child.h"

namespace psrt::test {

class Proc {
 public:
  Proc(std::string name, std::vector<std::string> argv);
  // Reads output until a line containing `text` appears; false at the deadline or exit.
  bool wait_line(const std::string& text, double seconds);
  // Waits for the process to exit (reading its output); nullopt at the deadline.
  std::optional<int> wait_exit(double seconds);
  void kill(int sig);
  const std::string& output() const { return output_; }
  launch::Child& child() { return *child_; }

 private:
  bool pump(int timeout_ms);  // reads what is there; false when both pipes are closed

  std::unique_ptr<launch::Child> child_;
  std::string output_;
  std::size_t scanned_ = 0;
};

std::string bin(const std::string& name);     // path of a built program
std::string source(const std::string& path);  // path inside the source tree
std::string temp_dir(const std::string& tag);  // a fresh directory under /tmp
void write_file(const std::string& path, const std::string& text);
// A file of raw fp32 values (what job.dump_params writes); empty if it cannot be read.
std::vector<float> read_floats(const std::string& path);

}  // namespace psrt::test
