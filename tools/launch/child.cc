#include "tools/launch/child.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace psrt::launch {

Child::Child(std::string name, const std::vector<std::string>& argv) : name_(std::move(name)) {
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
    for (int sig : {SIGTERM, SIGCHLD, SIGHUP, SIGPIPE, SIGQUIT}) ::signal(sig, SIG_DFL);
    ::signal(SIGINT, SIG_IGN);  // Ctrl-C is the launcher's to handle; it stops us with SIGTERM
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(err[1], STDERR_FILENO);
    ::execv(args[0], args.data());
    const char* msg = "psrt-launch: exec failed\n";
    [[maybe_unused]] auto n = ::write(STDERR_FILENO, msg, std::strlen(msg));
    ::_exit(127);
  }
  ::close(out[1]);
  ::close(err[1]);
  out_fd_ = out[0];
  err_fd_ = err[0];
  ::fcntl(out_fd_, F_SETFL, O_NONBLOCK);
  ::fcntl(err_fd_, F_SETFL, O_NONBLOCK);
}

Child::~Child() {
  if (out_fd_ >= 0) ::close(out_fd_);
  if (err_fd_ >= 0) ::close(err_fd_);
  if (!exit_code_ && pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

std::vector<std::string> Child::read_lines(int fd) {
  std::string& buf = fd == out_fd_ ? out_buf_ : err_buf_;
  int& own = fd == out_fd_ ? out_fd_ : err_fd_;
  std::vector<std::string> lines;
  char tmp[4096];
  while (true) {
    const ssize_t n = ::read(fd, tmp, sizeof tmp);
    if (n > 0) {
      buf.append(tmp, std::size_t(n));
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) break;
    // end of file or error: the child closed its end
    ::close(own);
    own = -1;
    if (!buf.empty() && buf.back() != '\n') buf.push_back('\n');
    break;
  }
  std::size_t start = 0;
  for (std::size_t nl; (nl = buf.find('\n', start)) != std::string::npos; start = nl + 1) {
    lines.push_back(buf.substr(start, nl - start));
  }
  buf.erase(0, start);
  return lines;
}

std::optional<int> Child::poll_exit() {
  if (exit_code_) return exit_code_;
  int status = 0;
  const pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  return exit_code_;
}

void Child::signal(int sig) {
  if (!exit_code_ && pid_ > 0) ::kill(pid_, sig);
}

}  // namespace psrt::launch
