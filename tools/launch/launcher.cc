#include "tools/launch/launcher.h"

#include <poll.h>
#include <sys/resource.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace psrt::launch {
namespace {

// Blocks the signals the launch handles (on this thread and every thread it starts after) and
// returns a descriptor to read them from. Output to a reader that went away (`psrt-launch job.yaml
// | head`) stops the job and cleans up, where the signal's default action left the children to
// fail on their own and the job's secret on disk.
// A stop signal this launch inherited as ignored stays so (SIGHUP under nohup, SIGINT in a
// background job of a script): a blocked signal reaches the signalfd even when ignored, and
// `nohup psrt-launch` was stopped by a hangup. Its children inherit the ignoring (core/process.h).
int open_signal_fd() {
  sigset_t mask;
  sigemptyset(&mask);
  for (int sig : {SIGTERM, SIGCHLD, SIGPIPE}) sigaddset(&mask, sig);
  for (int sig : {SIGINT, SIGHUP, SIGQUIT}) {
    struct sigaction action {};
    if (::sigaction(sig, nullptr, &action) == 0 && action.sa_handler == SIG_IGN) continue;
    sigaddset(&mask, sig);
  }
  sigprocmask(SIG_BLOCK, &mask, nullptr);
  return signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
}

// " (128 + SIGXFSZ, File size limit exceeded: killed by it?)" for an exit code past 128, which
// is how a death by a signal is reported: "exited with code 153" named no cause.
std::string signal_hint(int code) {
  const int sig = code - 128;
  if (sig <= 0 || sig >= NSIG) return "";
  const char* abbrev = sigabbrev_np(sig);
  const char* what = strsignal(sig);
  if (abbrev == nullptr || what == nullptr) return "";
  return std::string(" (128 + SIG") + abbrev + ", " + what + ": killed by it?)";
}

// After a failed fork or pipe: the limit it met, if the message names one.
std::string limits_hint(const std::string& what) {
  rlimit lim{};
  if (what.find("Too many open files") != std::string::npos &&
      ::getrlimit(RLIMIT_NOFILE, &lim) == 0) {
    return " (this launch may hold " + std::to_string(lim.rlim_cur) +
           " open files, 3 for each process it starts; ulimit -n raises it)";
  }
  if (what.find("Resource temporarily unavailable") != std::string::npos) {
    return " (the limit on processes? ulimit -u)";
  }
  return "";
}

// A child's line as the launch prints it: "worker 1 | line".
std::string prefixed(const std::string& name, const std::string& line) {
  std::string out = name;
  if (out.size() < 9) out.resize(9, ' ');
  return out + "| " + line;
}

bool same_file(int a, int b) {
  struct stat x {}, y {};
  return ::fstat(a, &x) == 0 && ::fstat(b, &y) == 0 && x.st_dev == y.st_dev &&
         x.st_ino == y.st_ino;
}

template <class Clock>
typename Clock::time_point after(double seconds) {
  return Clock::now() + std::chrono::duration_cast<typename Clock::duration>(
                            std::chrono::duration<double>(seconds));
}

}  // namespace

Launcher::Launcher(std::string bin_dir, std::string config_path, std::vector<std::string> sets,
                   double grace_s, bool resume, std::size_t output_limit)
    : bin_dir_(std::move(bin_dir)),
      config_path_(std::move(config_path)),
      sets_(std::move(sets)),
      grace_s_(grace_s),
      resume_(resume),
      sig_fd_(open_signal_fd()),
      out_(std::make_unique<OutputQueue>(STDOUT_FILENO, output_limit)) {
  // `2>&1`: one queue, one writer, so that lines keep their order and are not cut into each
  // other (two writers' batches past PIPE_BUF interleaved mid-line).
  if (same_file(STDOUT_FILENO, STDERR_FILENO)) {
    err_ = out_.get();
  } else {
    err_own_ = std::make_unique<OutputQueue>(STDERR_FILENO, output_limit);
    err_ = err_own_.get();
  }
  for (int fd : {STDOUT_FILENO, STDERR_FILENO}) {
    struct stat st {};
    if (::fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode)) reader_pipes_.push_back(fd);
    if (err_ == out_.get()) break;  // one pipe
  }
}

Launcher::~Launcher() {
  if (sig_fd_ >= 0) ::close(sig_fd_);
}

void Launcher::say(bool err, const std::string& line) {
  (err ? err_ : out_.get())->put(line, true);
}

int Launcher::run(const Config& config) {
  spawn(bin_dir_ + "/psrt-server", "server", 0, {});
  if (children_.empty()) return rc_;
  // Server 0 binds the coordinator endpoint (maybe port 0) and says where it listens.
  const auto deadline = after<Clock>(config.cluster.start_timeout_s);
  while (endpoint_.empty() && !stopping_) {
    if (Clock::now() > deadline) {
      say(true, "psrt-launch: server 0 did not start listening within " +
                    std::to_string(int(config.cluster.start_timeout_s)) + " s");
      stop(1, 0);
      break;
    }
    step(200);
  }
  if (!stopping_) {
    const std::vector<std::string> extra{"--set", "cluster.coordinator=" + endpoint_};
    // Between two starts, a signal or an exit that came meanwhile: the launch stopped only once
    // it had started every process (a SIGTERM at 1024 x 1024 took minutes, a failed server 0
    // had hundreds of workers started after it).
    for (int s = 1; s < config.cluster.servers && take_pending(); ++s)
      spawn(bin_dir_ + "/psrt-server", "server", s, extra);
    for (int w = 0; w < config.cluster.workers && take_pending(); ++w)
      spawn(bin_dir_ + "/psrt-worker", "worker", w, extra);
  }
  while (!all_done()) step(kill_at_ || term_at_ ? 100 : 1000);
  return rc_;
}

int Launcher::finish(int rc) {
  if (rc == 128 + SIGPIPE) return rc;  // nobody reads: say nothing
  out_->note_drops();
  err_->note_drops();
  std::string end = rc == 0 ? "every process finished" : "job failed";
  const uint64_t lost = out_->dropped_lines() + (err_own_ ? err_own_->dropped_lines() : 0);
  if (lost > 0) {
    end += " (" + std::to_string(lost) + " lines of output lost: their reader fell behind, " +
           "--output-buffer-kib holds more; or a write failed)";
  }
  say(rc != 0, "psrt-launch: " + end);
  // After Ctrl-C the user wants the prompt back: a second for the reader, not more.
  const std::optional<Clock::time_point> deadline =
      stopped_by_signal_ ? std::optional(after<Clock>(1.0)) : std::nullopt;
  const bool drained = drain(deadline);
  // Stdout that could not be written (a full disk) lost the job's results: the launch fails,
  // where it exited 0 with them gone. Counted once every line was tried (a file-size limit
  // fails the last lines only); said on stderr where that is another file: with `2>&1` the
  // launch failed silently, exit 0.
  if (const uint64_t failed = out_->failed_lines(); failed > 0) {
    if (err_own_) {
      say(true, "psrt-launch: " + std::to_string(failed) + " lines could not be written to " +
                    "stdout (a full disk?), the job's results among them");
      if (drained) drain(deadline);
    }
    if (rc == 0) rc = 1;
  }
  return rc;
}

bool Launcher::drain(std::optional<Clock::time_point> deadline) {
  while (!out_->idle() || !err_->idle()) {
    int timeout_ms = -1;
    if (deadline) {
      const auto left = *deadline - Clock::now();
      if (left <= Clock::duration::zero()) return false;
      timeout_ms = int(std::chrono::duration_cast<std::chrono::milliseconds>(left).count()) + 1;
    }
    std::vector<pollfd> fds = own_fds();
    ::poll(fds.data(), fds.size(), timeout_ms);
    if ((fds[0].revents & POLLIN) && read_signals() != 0) return false;  // a signal: stop waiting
    consume_queue_events();
  }
  return true;
}

void Launcher::spawn(const std::string& bin, const std::string& role, int rank,
                     const std::vector<std::string>& extra) {
  std::vector<std::string> argv{bin, "--config", config_path_, "--rank", std::to_string(rank)};
  for (const auto& s : sets_) {
    argv.push_back("--set");
    argv.push_back(s);
  }
  argv.insert(argv.end(), extra.begin(), extra.end());
  if (resume_) argv.push_back("--resume");
  const std::string name = role + " " + std::to_string(rank);
  try {
    children_.push_back(std::make_unique<Process>(name, argv));
  } catch (const std::exception& e) {  // out of file descriptors or processes: std::terminate
    say(true, "psrt-launch: cannot start " + name + ": " + e.what() + limits_hint(e.what()) +
                  "; stopping the others");
    stop(1, 0);
  }
}

bool Launcher::take_pending() {
  std::vector<pollfd> fds = own_fds();
  for (int fd : reader_pipes_) fds.push_back({fd, 0, 0});  // a reader gone: POLLERR
  if (!stopping_ && ::poll(fds.data(), fds.size(), 0) > 0) step(0);
  return !stopping_;
}

bool Launcher::all_done() {
  // An exit first seen here is judged as in step(): this loop took the exit code of a process
  // that refused the job (exit 2) after one it aborted (exit 1), and the launch exited 1
  // (os_limits_test, once in a fresh-ci run).
  reap();
  for (auto& c : children_)
    if (!c->exit_code() || c->pipes_open()) return false;
  return true;
}

// Stops every process: SIGTERM after `term_delay_s`, SIGKILL `grace_s_` later. A job that failed
// gets three seconds first: its coordinator tells the others why, and a process that refused the
// job ends telling it so (exit 2) instead of dying by the signal.
void Launcher::stop(int rc, double term_delay_s) {
  if (stopping_) return;
  stopping_ = true;
  rc_ = rc;
  term_at_ = after<Clock>(term_delay_s);
}

void Launcher::signal_stop() {
  if (!term_at_ || Clock::now() < *term_at_) return;
  term_at_.reset();
  for (auto& c : children_) c->signal(SIGTERM);
  kill_at_ = after<Clock>(grace_s_);
}

std::vector<pollfd> Launcher::own_fds() const {
  return {{sig_fd_, POLLIN, 0}, {out_->event_fd(), POLLIN, 0}, {err_->event_fd(), POLLIN, 0}};
}

void Launcher::consume_queue_events() {
  out_->consume_event();
  if (err_ != out_.get()) err_->consume_event();
}

int Launcher::read_signals() {
  int stop_signal = 0;
  signalfd_siginfo info;
  while (::read(sig_fd_, &info, sizeof info) == sizeof info) {
    if (info.ssi_signo != SIGCHLD && info.ssi_signo != SIGPIPE && stop_signal == 0) {
      stop_signal = int(info.ssi_signo);
    }
  }
  return stop_signal;
}

void Launcher::step(int timeout_ms) {
  std::vector<pollfd> fds = own_fds();
  // A pipe whose reader went away (`| head -1`) is seen at once (POLLERR), not at the next line
  // the launch writes there: with only the results on stdout, that was the job's end.
  const std::size_t first_reader = fds.size();
  if (!stopping_) {
    for (int fd : reader_pipes_) fds.push_back({fd, 0, 0});
  }
  std::vector<std::pair<Process*, int>> owners(fds.size(), {nullptr, -1});
  for (auto& c : children_) {
    for (int fd : {c->out_fd(), c->err_fd()}) {
      if (fd < 0) continue;
      fds.push_back({fd, POLLIN, 0});
      owners.emplace_back(c.get(), fd);
    }
  }
  ::poll(fds.data(), fds.size(), timeout_ms);
  bool reader_gone = false;
  for (std::size_t i = kOwnFds; i < fds.size(); ++i) {
    if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    Process* c = owners[i].first;
    if (c == nullptr) {  // one of reader_pipes_
      reader_gone = reader_gone || (i >= first_reader && (fds[i].revents & POLLERR));
      continue;
    }
    const bool err = owners[i].second == c->err_fd();
    for (const auto& line : c->read_lines(owners[i].second)) {
      // The servers' address lines are for the launch (server 0's) and cluster scripts.
      if (line.rfind("PSRT_LISTENING ", 0) == 0 && c->name().rfind("server ", 0) == 0) {
        if (endpoint_.empty() && c == children_.front().get()) endpoint_ = line.substr(15);
        continue;
      }
      // What a daemon prints on stdout is its results (PSRT_RESULT, the test accuracy), a few
      // lines: never dropped. Its log (stderr) may be, past the limit.
      (err ? err_ : out_.get())->put(prefixed(c->name(), line), !err);
    }
  }
  if (const int sig = (fds[0].revents & POLLIN) ? read_signals() : 0; sig != 0) {
    if (!stopping_) {
      say(true, "psrt-launch: stopping every process");
      stopped_by_signal_ = true;
    }
    stop(128 + sig, 0);  // as a shell reports a death by it (SIGTERM exited 130, as Ctrl-C)
  }
  consume_queue_events();
  // Nobody reads what the launch prints (a write met EPIPE): nothing more to say.
  if (out_->broken() || err_->broken() || reader_gone) stop(128 + SIGPIPE, 0);
  reap();
  signal_stop();
  if (kill_at_ && Clock::now() > *kill_at_) {
    for (auto& c : children_) {
      if (c->exit_code()) continue;
      char grace[32];
      std::snprintf(grace, sizeof grace, "%.1f", grace_s_);
      say(true, "psrt-launch: " + c->name() + " still running " + grace +
                    " s after SIGTERM; sending SIGKILL");
      c->signal(SIGKILL);
    }
    kill_at_.reset();
  }
}

// A child that exited with an error stops the others.
void Launcher::reap() {
  for (auto& c : children_) {
    const bool was_running = !c->exit_code();
    auto code = c->poll_exit();
    if (!was_running || !code) continue;
    if (*code != 0 && !stopping_) {
      say(true, "psrt-launch: " + c->name() + " exited with code " + std::to_string(*code) +
                    signal_hint(*code) + "; stopping the others");
      // Past the sockets' 2 s linger: a process that refused the job (exit 2) and is still
      // flushing its last word was killed by the SIGTERM after one second (exit 143), under load.
      stop(*code > 125 ? 1 : *code, 3.0);
    } else if (*code == 2 && rc_ == 1) {
      // A refusal (a config or data error) ended the job, though a process it aborted was quicker
      // to exit: the launch exits 2, as it would have without the race.
      rc_ = 2;
    }
  }
}

}  // namespace psrt::launch
