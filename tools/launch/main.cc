// psrt-launch CONFIG: starts the job's servers and workers on this machine, prefixes their output
// with role and rank, stops everyone when one fails or on Ctrl-C, and leaves no process behind.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <cerrno>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <stdexcept>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "config/job_config.h"
#include "core/config.h"
#include "core/fd_limit.h"
#include "core/status.h"
#include "core/process.h"
#include "tools/launch/model_check.h"
#include "tools/launch/plan_step.h"

namespace {

using Clock = std::chrono::steady_clock;
using psrt::Process;

std::string self_dir() {
  return std::filesystem::canonical("/proc/self/exe").parent_path().string();
}

// A directory of mode 0700 holding "job.secret": 32 random bytes, mode 0600.
std::string write_job_secret() {
  std::string dir = (std::filesystem::temp_directory_path() / "psrt-launch-XXXXXX").string();
  if (!::mkdtemp(dir.data())) throw std::runtime_error(std::strerror(errno));
  const std::string path = dir + "/job.secret";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) throw std::runtime_error(path + ": " + std::strerror(errno));
  std::random_device rd;
  uint32_t words[8];
  for (auto& w : words) w = rd();
  const bool ok = ::write(fd, words, sizeof words) == ssize_t(sizeof words);
  ::close(fd);
  if (!ok) throw std::runtime_error(path + ": short write");
  return dir;
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

// Removes the job's secret folder however the launch ends.
struct SecretDir {
  std::string path;
  ~SecretDir() {
    std::error_code ec;
    if (!path.empty()) std::filesystem::remove_all(path, ec);
  }
};

void print_line(const Process& c, const std::string& line, bool err) {
  std::FILE* f = err ? stderr : stdout;
  std::fprintf(f, "%-9s| %s\n", c.name().c_str(), line.c_str());
  std::fflush(f);
}

class Launcher {
 public:
  Launcher(std::string config_path, std::vector<std::string> sets, double grace_s, bool resume)
      : config_path_(std::move(config_path)),
        sets_(std::move(sets)),
        grace_s_(grace_s),
        resume_(resume) {
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGCHLD);
    sigaddset(&mask, SIGHUP);
    sigaddset(&mask, SIGQUIT);
    // Output to a reader that went away (`psrt-launch job.yaml | head`): the job is stopped and
    // cleaned up, where the signal's default action left the children to fail on their own and
    // the job's secret on disk.
    sigaddset(&mask, SIGPIPE);
    sigprocmask(SIG_BLOCK, &mask, nullptr);
    sig_fd_ = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  }

  int run(const psrt::Config& config) {
    const std::string dir = self_dir();
    spawn(dir + "/psrt-server", "server", 0, {});
    if (children_.empty()) return rc_;
    // Server 0 binds the coordinator endpoint (maybe port 0) and says where it listens.
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(
                                                 config.cluster.start_timeout_s));
    while (endpoint_.empty() && !stopping_) {
      if (Clock::now() > deadline) {
        std::fprintf(stderr, "psrt-launch: server 0 did not start listening within %.0f s\n",
                     config.cluster.start_timeout_s);
        stop(1, 0);
        break;
      }
      step(200);
    }
    if (!stopping_) {
      const std::vector<std::string> extra{"--set", "cluster.coordinator=" + endpoint_};
      for (int s = 1; s < config.cluster.servers && !stopping_; ++s)
        spawn(dir + "/psrt-server", "server", s, extra);
      for (int w = 0; w < config.cluster.workers && !stopping_; ++w)
        spawn(dir + "/psrt-worker", "worker", w, extra);
    }
    while (!all_done()) step(kill_at_ || term_at_ ? 100 : 1000);
    return rc_;
  }

 private:
  void spawn(const std::string& bin, const std::string& role, int rank,
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
      std::fprintf(stderr, "psrt-launch: cannot start %s: %s%s; stopping the others\n",
                   name.c_str(), e.what(), limits_hint(e.what()).c_str());
      stop(1, 0);
    }
  }

  bool all_done() {
    for (auto& c : children_)
      if (!c->poll_exit() || c->pipes_open()) return false;
    return true;
  }

  // Stops every process: SIGTERM after `term_delay_s`, SIGKILL `grace_s_` later. A job that
  // failed gets a second first: its coordinator tells the others why, and a process that refused
  // the job ends telling it so (exit 2) instead of dying by the signal.
  void stop(int rc, double term_delay_s) {
    if (stopping_) return;
    stopping_ = true;
    rc_ = rc;
    term_at_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                  std::chrono::duration<double>(term_delay_s));
  }

  void signal_stop() {
    if (!term_at_ || Clock::now() < *term_at_) return;
    term_at_.reset();
    for (auto& c : children_) c->signal(SIGTERM);
    kill_at_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                  std::chrono::duration<double>(grace_s_));
  }

  void step(int timeout_ms) {
    std::vector<pollfd> fds{{sig_fd_, POLLIN, 0}};
    std::vector<std::pair<Process*, int>> owners{{nullptr, -1}};
    for (auto& c : children_) {
      for (int fd : {c->out_fd(), c->err_fd()}) {
        if (fd < 0) continue;
        fds.push_back({fd, POLLIN, 0});
        owners.emplace_back(c.get(), fd);
      }
    }
    ::poll(fds.data(), fds.size(), timeout_ms);
    for (std::size_t i = 1; i < fds.size(); ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Process* c = owners[i].first;
      const bool err = owners[i].second == c->err_fd();
      for (const auto& line : c->read_lines(owners[i].second)) {
        if (endpoint_.empty() && c == children_.front().get() &&
            line.rfind("PSRT_LISTENING ", 0) == 0) {
          endpoint_ = line.substr(15);
          continue;
        }
        print_line(*c, line, err);
      }
    }
    if (fds[0].revents & POLLIN) {
      signalfd_siginfo info;
      while (::read(sig_fd_, &info, sizeof info) == sizeof info) {
        if (info.ssi_signo == SIGPIPE) {  // nobody reads what it prints: nothing more to say
          stop(128 + SIGPIPE, 0);
        } else if (info.ssi_signo != SIGCHLD) {  // INT, TERM, HUP, QUIT
          if (!stopping_) std::fprintf(stderr, "psrt-launch: stopping every process\n");
          stop(130, 0);
        }
      }
    }
    for (auto& c : children_) {
      const bool was_running = !c->exit_code();
      auto code = c->poll_exit();
      if (was_running && code) {
        if (*code != 0 && !stopping_) {
          std::fprintf(stderr, "psrt-launch: %s exited with code %d; stopping the others\n",
                       c->name().c_str(), *code);
          stop(*code > 125 ? 1 : *code, 1.0);
        } else if (*code == 2 && rc_ == 1) {
          // A refusal (a config or data error) ended the job, though a process it aborted was
          // quicker to exit: the launch exits 2, as it would have without the race.
          rc_ = 2;
        }
      }
    }
    signal_stop();
    if (kill_at_ && Clock::now() > *kill_at_) {
      for (auto& c : children_) {
        if (c->exit_code()) continue;
        std::fprintf(stderr,
                     "psrt-launch: %s still running %.1f s after SIGTERM; sending SIGKILL\n",
                     c->name().c_str(), grace_s_);
        c->signal(SIGKILL);
      }
      kill_at_.reset();
    }
  }

  std::string config_path_;
  std::vector<std::string> sets_;
  double grace_s_;
  bool resume_;
  int sig_fd_ = -1;
  std::vector<std::unique_ptr<Process>> children_;
  std::string endpoint_;
  bool stopping_ = false;
  int rc_ = 0;
  std::optional<Clock::time_point> term_at_, kill_at_;
};

// placement.plan: auto: psrt-placer's plan, checked as every worker will lay it out, its path
// added to `sets`. Returns the exit code of a failure (0: none).
int auto_plan(const psrt::Config& config, const std::string& config_path,
              std::vector<std::string>& sets) {
  try {
    const std::string plan = psrt::launch::make_plan(config, config_path, sets, self_dir());
    std::printf("psrt-launch: placement plan written to %s\n", plan.c_str());
    sets.push_back("placement.plan=" + plan);
    psrt::launch::check_plan_stages(config, plan);
    try {  // as every worker will lay it out, before any starts
      psrt::launch::check_model(psrt::load_config(config_path, sets), true);
    } catch (const psrt::ConfigError& e) {
      throw psrt::ConfigError(config.placement.placer + "'s plan cannot run: " + e.what() +
                              " (placement.placer; or give placement.plan a file)");
    }
  } catch (const psrt::JobError& e) {
    std::fprintf(stderr, "psrt-launch: placement: %s\n", e.what());
    return 1;
  } catch (const psrt::ConfigError& e) {
    std::fprintf(stderr, "psrt-launch: %s\n", e.what());
    return 2;
  }
  return 0;
}

// The job file as every process will read it, checked (and its model built) before anything
// starts. Returns the exit code of a refusal (0: none).
int load_job(const std::string& config_path, const std::vector<std::string>& sets, bool resume,
             bool check_only, psrt::Config& config) {
  try {
    // Every server and worker reads the file again: a pipe (`<(...)`) would be empty for them
    // and they would train the defaults, a FIFO would block them.
    std::error_code ec;
    const auto kind = std::filesystem::status(config_path, ec).type();
    if (!check_only && !ec && kind != std::filesystem::file_type::regular &&
        kind != std::filesystem::file_type::directory) {
      throw psrt::ConfigError(config_path + ": not a regular file (a pipe?); every server and " +
                              "worker reads the job file again, so save it to a file");
    }
    config = psrt::load_config(config_path, sets);
    if (resume && config.checkpoint.dir.empty()) {
      throw psrt::ConfigError("--resume: checkpoint.dir is not set in " + config_path);
    }
    psrt::launch::check_model(config, !check_only);
    if (check_only && config.security.curve && config.security.secret_file.empty()) {
      throw psrt::ConfigError("security.curve: true needs security.secret_file where a cluster "
                              "script starts the processes (psrt-launch makes a secret only for "
                              "the processes it starts itself)");
    }
  } catch (const std::exception& e) {  // ConfigError, or a profile that cannot be read
    std::fprintf(stderr, "psrt-launch: %s\n", e.what());
    return 2;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"psrt-launch: run a psrt job's servers and workers on this machine"};
  std::string config_path;
  std::vector<std::string> sets;
  double grace = 5;
  bool check_only = false;
  bool resume = false;
  app.add_option("config", config_path, "job configuration (YAML)")->required();
  app.add_option("-s,--set", sets, "override a config key: a.b=value (repeatable)");
  app.add_option("--grace", grace, "seconds between SIGTERM and SIGKILL when stopping")
      ->check(CLI::Range(0.0, 3600.0));
  app.add_flag(
      "--check", check_only,
      "validate the job file (and build its model once) and print its cluster size; start "
      "nothing (cluster scripts use it)");
  app.add_flag("--resume", resume,
               "restart the job from the newest checkpoint every server has (checkpoint.dir)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (!std::isfinite(grace)) {  // CLI::Range lets NaN through: every stop sent SIGKILL at once
    std::fprintf(stderr, "psrt-launch: --grace: not a number of seconds from 0 to 3600\n");
    return 2;
  }
  psrt::Config config;
  if (const int rc = load_job(config_path, sets, resume, check_only, config); rc != 0) return rc;
  std::printf("psrt-launch: %s: %d servers, %d workers\n", config_path.c_str(),
              config.cluster.servers, config.cluster.workers);
  std::fflush(stdout);
  if (check_only) return 0;
  // 3 descriptors for each process it starts (its pipes), beside its own few.
  if (const std::string why = psrt::ensure_open_files(
          16 + 3 * uint64_t(config.cluster.servers + config.cluster.workers + 1));
      !why.empty()) {
    std::fprintf(stderr, "psrt-launch: %s\n", why.c_str());
    return 2;
  }
  // security.curve without a secret: a fresh one for this job, readable by this user only.
  SecretDir secret_dir;
  if (config.security.curve && config.security.secret_file.empty()) {
    try {
      secret_dir.path = write_job_secret();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "psrt-launch: cannot write the job's secret: %s\n", e.what());
      return 2;
    }
    sets.push_back("security.secret_file=" + secret_dir.path + "/job.secret");
  }
  if (config.placement.plan == "auto") {  // psrt-placer makes the plan every process reads
    if (const int rc = auto_plan(config, config_path, sets); rc != 0) return rc;
  }
  ::setenv("PSRT_LAUNCHED", "1", 1);
  Launcher launcher(config_path, sets, grace, resume);
  const int rc = launcher.run(config);
  if (rc == 128 + SIGPIPE) return rc;  // nobody reads: say nothing
  std::fprintf(rc == 0 ? stdout : stderr, "psrt-launch: %s\n",
               rc == 0 ? "every process finished" : "job failed");
  return rc;
}
