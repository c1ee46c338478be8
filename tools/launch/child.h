// A child process of psrt-launch: spawned with its stdout and stderr on pipes, killed when the
// launcher dies (PR_SET_PDEATHSIG), its output split into lines.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace psrt::launch {

class Child {
 public:
  Child(std::string name, const std::vector<std::string>& argv);
  ~Child();
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  const std::string& name() const { return name_; }
  pid_t pid() const { return pid_; }
  int out_fd() const { return out_fd_; }
  int err_fd() const { return err_fd_; }

  // Reads what is available on `fd` (one of the two pipes); returns complete lines. At end of
  // file the pipe is closed and a last partial line returned.
  std::vector<std::string> read_lines(int fd);
  bool pipes_open() const { return out_fd_ >= 0 || err_fd_ >= 0; }

  // Non-blocking reap; the exit code (128 + signal for a signal) once the child has exited.
  std::optional<int> poll_exit();
  std::optional<int> exit_code() const { return exit_code_; }
  void signal(int sig);

 private:
  std::string name_;
  pid_t pid_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  std::string out_buf_, err_buf_;
  std::optional<int> exit_code_;
};

}  // namespace psrt::launch
