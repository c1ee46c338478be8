// psrt-launch CONFIG: starts the job's servers and workers on this machine, prefixes their output
// with role and rank, stops everyone when one fails or on Ctrl-C, and leaves no process behind.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "config/job_config.h"
#include "config/job_env.h"
#include "core/config.h"
#include "core/durable_file.h"
#include "core/fd_limit.h"
#include "core/process.h"
#include "core/status.h"
#include "tools/launch/launcher.h"
#include "tools/launch/model_check.h"
#include "tools/launch/plan_step.h"
#include "tools/launch/temp_folder.h"

namespace {

std::string self_dir() {
  return std::filesystem::canonical("/proc/self/exe").parent_path().string();
}

// Removes the job's secret folder however the launch ends.
struct SecretDir {
  std::string path;
  ~SecretDir() { remove(); }
  void remove() {
    std::error_code ec;
    if (!path.empty()) std::filesystem::remove_all(path, ec);
    path.clear();
  }
};

// Into `secret`, a directory of mode 0700 holding "job.secret": 32 random bytes, mode 0600.
// Throws naming what failed, the folder then removed with `secret` (a full disk left one
// psrt-launch-XXXXXX/ with an empty job.secret behind each try, and said only "short write").
void write_job_secret(SecretDir& secret) {
  std::string dir = psrt::launch::temp_folder() + "/psrt-launch-XXXXXX";
  if (!::mkdtemp(dir.data())) throw std::runtime_error(dir + ": " + std::strerror(errno));
  secret.path = dir;
  const std::string path = dir + "/job.secret";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) throw std::runtime_error(path + ": " + std::strerror(errno));
  std::random_device rd;
  uint32_t words[8];
  for (auto& w : words) w = rd();
  const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(words), sizeof words);
  const psrt::Status written = psrt::write_fully(fd, {&bytes, 1}, path);
  const int late = ::close(fd) != 0 ? errno : 0;  // a late write error (NFS)
  if (!written) throw std::runtime_error(written.message());
  if (late != 0) throw std::runtime_error(path + ": close: " + std::strerror(late));
}

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
      psrt::launch::check_model(psrt::load_config_with_env(config_path, sets), true);
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
  } catch (const std::exception& e) {  // the placer or psrt-place could not start: std::terminate
    std::fprintf(stderr, "psrt-launch: placement: %s\n", e.what());
    return 1;
  }
  return 0;
}

// The programs it runs, from its own folder: a psrt-launch copied alone said only "exec failed"
// once per process, after starting the others, and exited 1. Says which cannot run, or "".
std::string missing_program(const psrt::Config& config) {
  std::vector<std::string> programs{"psrt-server", "psrt-worker"};
  if (config.placement.plan == "auto") {
    programs.insert(programs.end(), {"psrt-placer", "psrt-place"});
  }
  for (const auto& program : programs) {
    const std::string path = self_dir() + "/" + program;
    if (::access(path.c_str(), X_OK) != 0) {
      return "cannot run " + path + ": " + std::strerror(errno) +
             " (psrt-launch runs the job's programs from its own folder)";
    }
  }
  return "";
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
    config = psrt::load_config_with_env(config_path, sets);
    if (resume && config.checkpoint.dir.empty()) {
      throw psrt::ConfigError("--resume: checkpoint.dir is not set in " + config_path);
    }
    try {
      psrt::launch::check_model(config, !check_only);
    } catch (const psrt::ConfigError& e) {  // its errors name the keys: the file too
      const std::string what = e.what();
      if (what.rfind(config_path + ":", 0) == 0) throw;
      throw psrt::ConfigError(config_path + ": " + what);
    }
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
  // Output past a file-size limit (ulimit -f; `psrt-launch ... > big.log`) fails the write,
  // which the launch reports: the default action killed it and the job with it, or left the
  // job's secret behind. The daemons ignore it too (config/daemon_main.cc).
  ::signal(SIGXFSZ, SIG_IGN);
  // An inherited ignored SIGCHLD makes the kernel reap the children itself: waitpid never saw
  // them end, and the launch waited for ever after the job had finished.
  ::signal(SIGCHLD, SIG_DFL);
  CLI::App app{"psrt-launch: run a psrt job's servers and workers on this machine"};
  std::string config_path;
  std::vector<std::string> sets;
  double grace = 5;
  bool check_only = false;
  bool resume = false;
  int output_kib = 8192;
  app.add_option("config", config_path, "job configuration (YAML)")->required();
  // One value each: `--set k=v job.yaml` took job.yaml as a second value ("config is required").
  app.add_option("-s,--set", sets, "override a config key: a.b=value (repeatable)")
      ->allow_extra_args(false);
  app.add_option("--grace", grace, "seconds between SIGTERM and SIGKILL when stopping")
      ->check(CLI::Range(0.0, 3600.0));
  app.add_flag(
      "--check", check_only,
      "validate the job file (and build its model once) and print its cluster size; start "
      "nothing (cluster scripts use it)");
  app.add_flag("--resume", resume,
               "restart the job from the newest checkpoint every server has (checkpoint.dir)");
  app.add_option("--output-buffer-kib", output_kib,
                 "output held for a reader that falls behind (a paused pager), per stream; past "
                 "it lines are dropped and counted, and the job goes on")
      ->check(CLI::Range(1, 1 << 20));
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
  if (const std::string why = missing_program(config); !why.empty()) {
    std::fprintf(stderr, "psrt-launch: %s\n", why.c_str());
    return 2;
  }
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
      write_job_secret(secret_dir);
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
  std::fflush(stdout);  // from here on the launcher's queues write stdout and stderr
  std::fflush(stderr);
  psrt::launch::Launcher launcher(self_dir(), config_path, sets, grace, resume,
                                  std::size_t(output_kib) * 1024);
  const int rc = launcher.run(config);
  secret_dir.remove();  // before waiting on a reader that may take its time
  return launcher.finish(rc);
}
