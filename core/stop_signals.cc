#include "core/stop_signals.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace psrt {
namespace {

// The write end of the live StopSignals' pipe, for the handler (a handler reaches no object).
std::atomic<int> g_write_fd{-1};

// Async-signal-safe: one byte, the signal's number, down the pipe (never blocks: O_NONBLOCK).
void on_signal(int sig) {
  const int saved_errno = errno;
  const int fd = g_write_fd.load(std::memory_order_relaxed);
  if (fd >= 0) {
    const unsigned char b = static_cast<unsigned char>(sig);
    [[maybe_unused]] const ssize_t n = ::write(fd, &b, 1);
  }
  errno = saved_errno;
}

// The next byte from `fd`, waiting up to `timeout_ms` (-1: for ever); -1 when none came.
int read_byte(int fd, int timeout_ms) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    int wait_ms = -1;
    if (timeout_ms >= 0) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          until - std::chrono::steady_clock::now());
      if (left.count() <= 0) return -1;
      wait_ms = int(left.count());
    }
    pollfd p{fd, POLLIN, 0};
    const int r = ::poll(&p, 1, wait_ms);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    unsigned char b = 0;
    const ssize_t n = ::read(fd, &b, 1);
    if (n == 1) return b;
    if (n < 0 && errno == EINTR) continue;
    return -1;  // the write end closed: no more signals
  }
}

constexpr unsigned char kQuit = 0;  // from the destructor: the process is ending on its own
constexpr int kSignals[] = {SIGTERM, SIGINT, SIGHUP};

void mask_stop_signals(int how) {
  sigset_t set;
  ::sigemptyset(&set);
  for (int sig : kSignals) ::sigaddset(&set, sig);
  ::pthread_sigmask(how, &set, nullptr);
}

}  // namespace

std::string StopSignals::name(int sig) {
  switch (sig) {
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGHUP: return "SIGHUP";
    default: return "signal " + std::to_string(sig);
  }
}

StopSignals::StopSignals(std::string who, Stop stop, double grace_s)
    : who_(std::move(who)), stop_(std::move(stop)), grace_s_(grace_s) {
  if (::pipe2(pipe_, O_CLOEXEC) != 0) {
    throw std::runtime_error(std::string("signal pipe: ") + std::strerror(errno));
  }
  ::fcntl(pipe_[1], F_SETFL, O_NONBLOCK);
  int expected = -1;
  if (!g_write_fd.compare_exchange_strong(expected, pipe_[1])) {
    ::close(pipe_[0]);
    ::close(pipe_[1]);
    throw std::logic_error("StopSignals: one per process at a time");
  }
  waiter_ = std::thread([this] { wait(); });
  for (int sig : kSignals) {
    Saved s{sig, {}};
    ::sigaction(sig, nullptr, &s.action);
    if (s.action.sa_handler == SIG_IGN) continue;  // ignored by design (psrt-launch's SIGINT)
    struct sigaction act {};
    act.sa_handler = on_signal;
    ::sigemptyset(&act.sa_mask);
    // Back to the default action once caught: a second one ends the process at once.
    act.sa_flags = SA_RESTART | SA_RESETHAND;
    ::sigaction(sig, &act, nullptr);
    saved_.push_back(s);
  }
}

StopSignals::~StopSignals() {
  for (const auto& s : saved_) ::sigaction(s.sig, &s.action, nullptr);
  g_write_fd.store(-1);
  const unsigned char quit = kQuit;
  [[maybe_unused]] const ssize_t n = ::write(pipe_[1], &quit, 1);
  waiter_.join();
  ::close(pipe_[0]);
  ::close(pipe_[1]);
}

void StopSignals::block_in_this_thread() { mask_stop_signals(SIG_BLOCK); }

StopSignals::Target::Target(StopSignals& signals, Stop stop) : signals_(signals) {
  std::lock_guard lock(signals_.mu_);
  previous_ = std::exchange(signals_.stop_, std::move(stop));
}

StopSignals::Target::~Target() {
  std::lock_guard lock(signals_.mu_);  // waits for a call of this target in progress
  signals_.stop_ = std::move(previous_);
}

void StopSignals::wait() {
  mask_stop_signals(SIG_UNBLOCK);  // the one thread sure to take them
  const int sig = read_byte(pipe_[0], -1);
  if (sig <= 0) return;  // the destructor's
  bool taken = false;
  {
    std::lock_guard lock(mu_);
    taken = stop_ && stop_(name(sig));
  }
  if (!taken) die(sig);
  const int next = read_byte(pipe_[0], int(grace_s_ * 1000));
  if (next == kQuit) return;
  if (next < 0) {
    std::fprintf(stderr, "%s: still running %g s after %s; ending now\n", who_.c_str(),
                 grace_s_, name(sig).c_str());
    die(sig);
  }
  die(next);  // a second signal
}

void StopSignals::die(int sig) {
  ::signal(sig, SIG_DFL);
  ::raise(sig);
  std::_Exit(128 + sig);  // not reached: the default action of these signals ends the process
}

}  // namespace psrt
