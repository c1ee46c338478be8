#include "config/daemon_main.h"

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <optional>
#include <stdexcept>

#include "config/job_config.h"
#include "config/job_env.h"
#include "core/abort_notice.h"
#include "core/endpoints.h"
#include "core/fd_limit.h"
#include "core/logging.h"
#include "core/rank_env.h"
#include "core/status.h"

namespace psrt {

namespace {

wire::Role wire_role(const std::string& role) {
  return role == "server" ? wire::SERVER : wire::WORKER;
}

// The job's config as this process reads it (the environment's cluster addresses before --set),
// with its rank resolved and checked against the job. Throws ConfigError.
Config load_job(const std::string& role, DaemonArgs& args, int rank_flag, bool rank_given) {
  const std::string env_role = role_from_env();
  if (!env_role.empty() && env_role != role) {
    throw ConfigError("PSRT_ROLE=" + env_role + " but this is psrt-" + role);
  }
  if (rank_given && rank_flag < 0) {
    throw ConfigError("--rank " + std::to_string(rank_flag) + ": must be a non-negative integer");
  }
  args.rank = resolve_rank(rank_flag).value_or(0);
  Config config = load_config_with_env(args.config_path, args.sets);
  const int count = role == "server" ? config.cluster.servers : config.cluster.workers;
  if (args.rank >= count) {
    throw ConfigError(role + " rank " + std::to_string(args.rank) + " is outside the job: " +
                      config.source + " has cluster." + role + "s = " + std::to_string(count));
  }
  return config;
}

// A stop signal before the body points it at its server or client (data loading, a device): the
// coordinator hears it as a start-up failure, and the process ends by the signal. A worker
// stopped then was found only when cluster.start_timeout_s ran out.
StopSignals::Stop tell_stop(const Config& config, const std::string& role,
                            const DaemonArgs& args) {
  return [config, role, rank = uint32_t(args.rank)](const std::string& sig) {
    tell_coordinator_abort(config, wire_role(role), rank, "stopped by " + sig);
    return false;
  };
}

// What this machine and the flags must allow before the body starts. Throws ConfigError.
void check_start(const std::string& role, const DaemonArgs& args, Config& config) {
  if (const std::string why = ensure_open_files(
          daemon_open_files(role == "server", config.cluster.servers, config.cluster.workers,
                            config.metrics.port >= 0));
      !why.empty()) {
    throw ConfigError(why);
  }
  config.checkpoint.resume = args.resume;
  if (args.resume && config.checkpoint.dir.empty()) {
    throw ConfigError("--resume: checkpoint.dir is not set in " + args.config_path);
  }
}

// The results go to stdout (PSRT_RESULT, the accuracy): on a full disk they were lost and the
// process exited 0. False (said on stderr) when they could not be written. A pipe whose reader
// went away (`| head`, psrt-launch stopping) is the reader's choice, not a loss.
bool results_written(const std::string& role, int rank) {
  const bool flushed = std::fflush(stdout) == 0;
  const int error = errno;
  struct stat out {};
  const bool to_pipe =
      ::fstat(STDOUT_FILENO, &out) == 0 && (S_ISFIFO(out.st_mode) || S_ISSOCK(out.st_mode));
  if (to_pipe || (flushed && !std::ferror(stdout))) return true;
  const std::string why =
      flushed ? "a write failed (a full disk or a file-size limit?)" : std::strerror(error);
  std::fprintf(stderr,
               "psrt-%s %d: the job ended, but this process's output (stdout) could "
               "not be written: %s; its results (PSRT_RESULT, the accuracy) are lost\n",
               role.c_str(), rank, why.c_str());
  return false;
}

}  // namespace

int daemon_main(int argc, char** argv, const std::string& role,
                const std::function<void(const Config&, const DaemonArgs&)>& body) {
  // Output to a reader that went away (a closed pipe, a log collector that died) fails the write
  // only: the default action ended the daemon silently and its job with "lost".
  ::signal(SIGPIPE, SIG_IGN);
  // A file-size limit (ulimit -f, inherited from a batch system) fails the write (EFBIG), which
  // the timeline, dump and checkpoint paths report: the default action killed the daemon.
  ::signal(SIGXFSZ, SIG_IGN);
  CLI::App app{"psrt-" + role + ": the psrt parameter-server runtime's " + role + " daemon"};
  DaemonArgs args;
  int rank_flag = -1;
  app.add_option("-c,--config", args.config_path, "job configuration (YAML)")->required();
  auto* rank_opt = app.add_option(
      "-r,--rank", rank_flag,
      "rank (default: PSRT_RANK, RANK, SLURM_PROCID, OMPI_COMM_WORLD_RANK, else 0)");
  app.add_flag("--resume", args.resume,
               "restart from the newest checkpoint every server has (checkpoint.dir)");
  app.add_option("-s,--set", args.sets, "override a config key: a.b=value (repeatable)")
      ->allow_extra_args(false);  // one value each, as psrt-launch's
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  // Once the config is loaded, a failure that is not the job's own (JobError: the job knows it)
  // is told to the coordinator, so that the job ends now with its reason (core/abort_notice.h).
  std::optional<Config> loaded;
  const auto tell = [&](const std::string& why) {
    if (!loaded) return;
    tell_coordinator_abort(*loaded, wire_role(role), uint32_t(args.rank), why);
  };
  try {
    Config config = load_job(role, args, rank_flag, rank_opt->count() > 0);
    loaded = config;  // a refusal from here on is told to the job (a rank of it)
    StopSignals stop("psrt-" + role + " " + std::to_string(args.rank),
                     tell_stop(config, role, args));
    args.stop = &stop;
    check_start(role, args, config);
    init_logging(role, args.rank, config.log_level);
    loaded = config;
    body(config, args);
    return results_written(role, args.rank) ? 0 : 1;
  } catch (const ConfigError& e) {
    std::fprintf(stderr, "psrt-%s: %s\n", role.c_str(), e.what());
    tell(e.what());
    return 2;
  } catch (const JobError& e) {
    spdlog::error("{}", e.what());
    std::fprintf(stderr, "psrt-%s %d: job failed: %s\n", role.c_str(), args.rank, e.what());
    return 1;
  } catch (const std::bad_alloc& e) {
    // Most often a model (model.profile with model.scale, or a network's size) larger than this
    // machine's memory: say so rather than "internal error".
    std::fprintf(stderr,
                 "psrt-%s %d: %s: a buffer of the model or of the job's limits is larger than "
                 "this machine can allocate (check model.profile / model.scale and limits.*)\n",
                 role.c_str(), args.rank, failure_reason(e).c_str());
    tell(failure_reason(e));
    return 1;
  } catch (const std::length_error& e) {
    std::fprintf(stderr, "psrt-%s %d: a size too large: %s (check model.profile / model.scale)\n",
                 role.c_str(), args.rank, e.what());
    tell(failure_reason(e));
    return 1;
  } catch (const std::exception& e) {
    const std::string why = failure_reason(e);
    std::fprintf(stderr, "psrt-%s %d: %s\n", role.c_str(), args.rank, why.c_str());
    tell(why);
    return 1;
  }
}

}  // namespace psrt
