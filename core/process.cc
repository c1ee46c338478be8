#include "core/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>

namespace psrt {

Process::Process(std::string name, const std::vector<std::string>& argv, Interrupt interrupt)
    : name_(std::move(name)) {
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
    throw std::runtime_error("pipe: " + std::string(std::strerror(errno)));
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork: " + std::string(std::strerror(errno)));
  if (pid_ == 0) {
    // Die with the launcher, whatever kills it; the check closes the race with an early death.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    // The launcher blocks INT/TERM/CHLD/HUP for its signalfd; both the mask and the dispositions
    // survive exec, so the daemon gets the defaults back (else SIGTERM stays pending for good).
    // A hangup or quit the launcher ignores (nohup) stays ignored by its daemons (kIgnore): a
    // group-wide SIGHUP ended those of a `nohup psrt-launch`. kDefault starts as from a
    // terminal: a test run under nohup sent its daemons a SIGHUP they then ignored.
    for (int sig : {SIGTERM, SIGCHLD, SIGPIPE}) ::signal(sig, SIG_DFL);
    for (int sig : {SIGHUP, SIGQUIT}) {
      struct sigaction action {};
      if (interrupt == Interrupt::kDefault ||
          (::sigaction(sig, nullptr, &action) == 0 && action.sa_handler != SIG_IGN)) {
        ::signal(sig, SIG_DFL);
      }
    }
    ::signal(SIGINT, interrupt == Interrupt::kIgnore ? SIG_IGN : SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(err[1], STDERR_FILENO);
    ::execv(args[0], args.data());
    // Only async-signal-safe calls here: the program and a word for the common causes.
    const int e = errno;
    const char* why = e == ENOENT ? ": not found\n" : e == EACCES ? ": permission denied\n"
                    : e == ENOEXEC ? ": not an executable\n" : ": exec failed\n";
    for (const char* part : {"cannot run ", static_cast<const char*>(args[0]), why}) {
      [[maybe_unused]] auto n = ::write(STDERR_FILENO, part, std::strlen(part));
    }
    ::_exit(127);
  }
  ::close(out[1]);
  ::close(err[1]);
  out_fd_ = out[0];
  err_fd_ = err[0];
  ::fcntl(out_fd_, F_SETFL, O_NONBLOCK);
  ::fcntl(err_fd_, F_SETFL, O_NONBLOCK);
  // (glibc 2.36 declares pidfd_open without C linkage: the system call itself.)
  pidfd_ = int(::syscall(SYS_pidfd_open, pid_, 0));  // -1 on an old kernel: pump waits briefly
}

Process::~Process() {
  if (out_fd_ >= 0) ::close(out_fd_);
  if (err_fd_ >= 0) ::close(err_fd_);
  if (pidfd_ >= 0) ::close(pidfd_);
  if (!exit_code_ && pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

std::vector<std::string> Process::read_lines(int fd) {
  std::string& buf = fd == out_fd_ ? out_buf_ : err_buf_;
  int& own = fd == out_fd_ ? out_fd_ : err_fd_;
  std::vector<std::string> lines;
  // Complete lines out of `buf`; a line longer than kMaxLine comes in pieces of that size (a
  // child writing without newlines grew the buffer without bound).
  constexpr std::size_t kMaxLine = 64 * 1024;
  const auto take_lines = [&] {
    std::size_t start = 0;
    for (std::size_t nl; (nl = buf.find('\n', start)) != std::string::npos; start = nl + 1) {
      lines.push_back(buf.substr(start, nl - start));
    }
    for (; buf.size() - start >= kMaxLine; start += kMaxLine) {
      lines.push_back(buf.substr(start, kMaxLine));
    }
    buf.erase(0, start);
  };
  char tmp[4096];
  // At most 1 MiB a call: a child that writes as fast as this reads left the other pipes
  // unread and these lines piling up; the pipe stays readable for the next poll.
  for (std::size_t got = 0; got < (std::size_t(1) << 20);) {
    const ssize_t n = ::read(fd, tmp, sizeof tmp);
    if (n > 0) {
      buf.append(tmp, std::size_t(n));
      got += std::size_t(n);
      take_lines();
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) break;
    // end of file or error: the child closed its end
    ::close(own);
    own = -1;
    if (!buf.empty() && buf.back() != '\n') buf.push_back('\n');
    take_lines();
    break;
  }
  return lines;
}

std::optional<int> Process::poll_exit() {
  if (exit_code_) return exit_code_;
  int status = 0;
  const pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  return exit_code_;
}

bool Process::pump(int timeout_ms,
                   const std::function<void(const std::string&, bool err)>& on_line) {
  std::vector<pollfd> fds;
  for (int fd : {out_fd_, err_fd_}) {
    if (fd >= 0) fds.push_back({fd, POLLIN, 0});
  }
  if (fds.empty() && poll_exit()) return false;
  if (!exit_code_ && pidfd_ >= 0) fds.push_back({pidfd_, POLLIN, 0});
  // Without a pidfd a child with closed pipes is exiting: wait briefly for its reaping.
  ::poll(fds.data(), fds.size(), fds.empty() ? std::min(timeout_ms, 20) : timeout_ms);
  for (const auto& p : fds) {
    if (p.fd == pidfd_ || !(p.revents & (POLLIN | POLLHUP | POLLERR))) continue;
    const bool err = p.fd == err_fd_;
    for (const auto& line : read_lines(p.fd)) {
      if (on_line) on_line(line, err);
    }
  }
  poll_exit();
  return pipes_open() || !exit_code_;
}

namespace {
using Clock = std::chrono::steady_clock;
int ms_left(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return int(std::clamp<int64_t>(left.count(), 0, 200));
}
}  // namespace

std::optional<std::string> Process::wait_line(const MatchFn& match, double seconds,
                                              const LineFn& on_other) {
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(seconds));
  std::optional<std::string> found;
  const auto take = [&](const std::string& line, bool) {
    if (found) {
      if (on_other) on_other(line);  // after the match: not lost, not matched again
    } else if (match(line)) {
      found = line;
    } else if (on_other) {
      on_other(line);
    }
  };
  while (!found && Clock::now() < deadline) {
    if (!pump(ms_left(deadline), take)) break;
  }
  return found;
}

std::optional<int> Process::wait_exit(double seconds, const LineFn& on_line) {
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(seconds));
  const auto take = [&](const std::string& line, bool) {
    if (on_line) on_line(line);
  };
  while (Clock::now() < deadline) {
    if (!pump(ms_left(deadline), take)) return exit_code_;
  }
  return poll_exit();
}

void Process::signal(int sig) {
  if (!exit_code_ && pid_ > 0) ::kill(pid_, sig);
}

}  // namespace psrt
