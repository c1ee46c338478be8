// A daemon's stop on SIGTERM, SIGINT or SIGHUP, told to its job. Without it the signal's default
// action ended the process at once, and its peers found it silent only after
// cluster.peer_timeout_s, naming it "lost". While a StopSignals lives, the first such signal
// calls `stop` with the signal's name, on a thread of its own: the daemon tells the job (an ABORT
// that names it and the signal) and ends as the job's failure, in one pass of its I/O loop.
//
// The stop stays bounded as it was: a second signal, a process still running `grace_s` after the
// first, or a `stop` that declines (false: the process is past its job) end the process by the
// signal's default action, as before. An ignored signal stays ignored (psrt-launch's children
// ignore SIGINT: Ctrl-C is the launcher's, which stops them with SIGTERM).
//
// Signal dispositions belong to the process: one StopSignals at a time (the constructor throws
// otherwise). A daemon makes it once its config is loaded, with a `stop` that tells the
// coordinator (core/abort_notice.h) and declines, and points it at its server or client while
// they live (Target): a signal during start-up, data loading included, is told to the job too.
#pragma once

#include <signal.h>

#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace psrt {

class StopSignals {
 public:
  // Called once, on the waiting thread; must be safe to call from any thread.
  using Stop = std::function<bool(const std::string& signal_name)>;

  // `who` names the process in its last line ("psrt-worker 1").
  StopSignals(std::string who, Stop stop, double grace_s = 3.0);
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  // Restores the signals' former actions; a signal from then on acts as it did before.
  ~StopSignals();

  // While it lives, signals go to `stop`; then to the one before. Made and destroyed on the
  // thread that owns the object `stop` reaches, which must outlive it.
  class Target {
   public:
    Target(StopSignals& signals, Stop stop);
    ~Target();
    Target(const Target&) = delete;
    Target& operator=(const Target&) = delete;

   private:
    StopSignals& signals_;
    Stop previous_;
  };

  // "SIGTERM", "SIGINT", "SIGHUP", else "signal N".
  static std::string name(int sig);
  // For an I/O thread: the signals' handler runs on another thread. ZeroMQ does not restart a
  // call a handler interrupts (EINTR), which could cut a multipart message in two. The waiting
  // thread takes them whatever the other threads block.
  static void block_in_this_thread();

 private:
  void wait();
  // Ends the process by `sig`'s default action.
  [[noreturn]] void die(int sig);

  std::string who_;
  std::mutex mu_;  // guards stop_ (Target swaps it while the waiting thread may call it)
  Stop stop_;
  double grace_s_;
  int pipe_[2] = {-1, -1};
  struct Saved {
    int sig;
    struct sigaction action;
  };
  std::vector<Saved> saved_;  // the signals caught, with their former actions
  std::thread waiter_;
};

}  // namespace psrt
