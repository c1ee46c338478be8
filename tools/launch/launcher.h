// psrt-launch's run of a job: starts server 0, the other servers and the workers once server 0
// listens, prints their lines prefixed with role and rank, and stops everyone when one fails, on
// Ctrl-C (SIGINT, SIGTERM, SIGHUP, SIGQUIT; those it inherited ignored stay so) or when its own
// reader goes away, also while it is still starting processes. One thread reads the
// children's pipes and the signals; the output goes through queues written by threads of their
// own, so that a reader who stops reading stalls no process of the job.
#pragma once

#include <poll.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/process.h"
#include "tools/launch/output_queue.h"

namespace psrt::launch {

class Launcher {
 public:
  // `bin_dir`: where psrt-server and psrt-worker are; `output_limit`: bytes of output held for a
  // reader that falls behind, per stream.
  Launcher(std::string bin_dir, std::string config_path, std::vector<std::string> sets,
           double grace_s, bool resume, std::size_t output_limit);
  ~Launcher();

  // Runs the job to its end; the launch's exit code (128 + SIGPIPE: its reader went away).
  int run(const Config& config);
  // Says how the job ended (with the lines dropped, if any) and waits until the reader has taken
  // the output, or a signal says not to wait (after Ctrl-C, a second at most).
  int finish(int rc);

 private:
  using Clock = std::chrono::steady_clock;

  // The launch's own lines: never dropped (why the job stopped, how it ended).
  void say(bool err, const std::string& line);
  // Waits until the reader has taken the output; false if `deadline` or a signal came first.
  bool drain(std::optional<Clock::time_point> deadline);
  void spawn(const std::string& bin, const std::string& role, int rank,
             const std::vector<std::string>& extra);
  // Takes a signal, an exit or a reader gone that came since the last look, without waiting
  // (SIGCHLD comes through the signal descriptor). False once the launch is stopping.
  bool take_pending();
  bool all_done();
  void stop(int rc, double term_delay_s);
  void signal_stop();
  void step(int timeout_ms);
  // What the launch polls for itself: the signals, then each queue's event (kOwnFds of them).
  static constexpr std::size_t kOwnFds = 3;
  std::vector<pollfd> own_fds() const;
  void consume_queue_events();
  int read_signals();  // the stop signal read (INT, TERM, HUP, QUIT), 0 if none
  void reap();

  std::string bin_dir_;
  std::string config_path_;
  std::vector<std::string> sets_;
  double grace_s_;
  bool resume_;
  int sig_fd_ = -1;  // before the queues: their threads start with the signals blocked
  std::unique_ptr<OutputQueue> out_;
  std::unique_ptr<OutputQueue> err_own_;  // stderr's, unless it is stdout's file (`2>&1`)
  OutputQueue* err_ = nullptr;
  std::vector<int> reader_pipes_;  // stdout and stderr where each is a pipe (step() watches them)
  std::vector<std::unique_ptr<Process>> children_;
  std::string endpoint_;
  bool stopping_ = false;
  bool stopped_by_signal_ = false;  // the stop came from a signal: the reader gets a second
  int rc_ = 0;
  std::optional<Clock::time_point> term_at_, kill_at_;
};

}  // namespace psrt::launch
