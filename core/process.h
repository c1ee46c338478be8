// A child process: spawned with its stdout and stderr on pipes, killed when its parent dies
// (PR_SET_PDEATHSIG), its output split into lines; waiting for a line or for the exit polls the
// pipes and a pidfd, never sleeps. psrt-launch, the benchmarks and the tests share it.
#pragma once

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace psrt {

class Process {
 public:
  using LineFn = std::function<void(const std::string& line)>;
  using MatchFn = std::function<bool(const std::string& line)>;

  // What the child does with SIGINT: kIgnore for a daemon of psrt-launch's (Ctrl-C is the
  // launch's to take; it stops them with SIGTERM), kDefault as from a terminal (a launch a test
  // starts, which keeps ignoring a SIGINT it inherits ignored, as in a script's background job).
  enum class Interrupt { kIgnore, kDefault };

  // The child starts with no signal blocked and the other signals at their defaults; with
  // kIgnore (psrt-launch's daemons) SIGINT ignored and a SIGHUP or SIGQUIT the parent ignores
  // (nohup) kept ignored; with kDefault (as from a terminal) those at their defaults too.
  Process(std::string name, const std::vector<std::string>& argv,
          Interrupt interrupt = Interrupt::kIgnore);
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  const std::string& name() const { return name_; }
  pid_t pid() const { return pid_; }
  int out_fd() const { return out_fd_; }
  int err_fd() const { return err_fd_; }

  // Reads what is available on `fd` (one of the two pipes); returns complete lines. At end of
  // file the pipe is closed and a last partial line returned.
  std::vector<std::string> read_lines(int fd);
  bool pipes_open() const { return out_fd_ >= 0 || err_fd_ >= 0; }

  // Waits up to `timeout_ms` for output or the exit, hands each complete line to `on_line` (with
  // whether it came from stderr) and reaps the child if it has exited. False once both pipes are
  // closed and the child reaped: nothing more will come.
  bool pump(int timeout_ms, const std::function<void(const std::string&, bool err)>& on_line);
  // Reads lines until one satisfies `match` (returned), handing the others to `on_other`;
  // nullopt at the deadline or when the output ends first.
  std::optional<std::string> wait_line(const MatchFn& match, double seconds,
                                       const LineFn& on_other = {});
  // Waits for the exit, handing every line to `on_line`; nullopt at the deadline.
  std::optional<int> wait_exit(double seconds, const LineFn& on_line = {});

  // Non-blocking reap; the exit code (128 + signal for a signal) once the child has exited.
  std::optional<int> poll_exit();
  std::optional<int> exit_code() const { return exit_code_; }
  void signal(int sig);

 private:
  std::string name_;
  pid_t pid_ = -1;
  int pidfd_ = -1;  // readable once the child has exited
  int out_fd_ = -1;
  int err_fd_ = -1;
  std::string out_buf_, err_buf_;
  std::optional<int> exit_code_;
};

}  // namespace psrt
