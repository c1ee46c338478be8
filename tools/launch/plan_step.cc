#include "tools/launch/plan_step.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>

#include <yaml-cpp/yaml.h>

#include "core/durable_file.h"
#include "core/process.h"
#include "core/status.h"
#include "tools/launch/temp_folder.h"

namespace psrt::launch {

namespace {

void echo(const Process& c, const std::string& line) {
  std::printf("%-9s| %s\n", c.name().c_str(), line.c_str());
  std::fflush(stdout);
}

std::string exited_early(Process& c, double seconds) {
  if (const auto code = c.poll_exit())
    return c.name() + " exited with code " + std::to_string(*code);
  return c.name() + " did not finish within " + std::to_string(int(seconds)) + " s";
}

// Echoes the child's lines (with its name) until one starts with `prefix`, returned without it.
// Throws JobError at the deadline or when the child exits first.
std::string await_prefix(Process& c, const std::string& prefix, double seconds) {
  const auto line = c.wait_line([&](const std::string& l) { return l.rfind(prefix, 0) == 0; },
                                seconds, [&](const std::string& l) { echo(c, l); });
  if (!line) throw JobError(exited_early(c, seconds));
  return line->substr(prefix.size());
}

// Echoes the child's lines until it exits; throws JobError unless it exits with 0 in time.
void await_success(Process& c, double seconds) {
  const auto code = c.wait_exit(seconds, [&](const std::string& l) { echo(c, l); });
  if (code != 0) throw JobError(exited_early(c, seconds));
}

}  // namespace

std::string make_plan(const Config& config, const std::string& config_path,
                      const std::vector<std::string>& sets, const std::string& bin_dir) {
  const double timeout = config.cluster.start_timeout_s;
  // file_safe_id: a '/' in job.id named a folder that is not there. The folder is checked before
  // the placer starts. A folder of this launch's own (mkdtemp, mode 0700): the plan had a name
  // anyone could guess in /tmp, and its writer follows a link planted there.
  std::string dir = (std::filesystem::path(temp_folder()) /
                     ("psrt-" + file_safe_id(config.job.id) + "-plan-XXXXXX"))
                        .string();
  if (::mkdtemp(dir.data()) == nullptr) {
    throw ConfigError(dir + ": cannot make the plan's folder: " + std::strerror(errno));
  }
  const auto plan = std::filesystem::path(dir) / "plan.yaml";
  std::unique_ptr<Process> placer;
  std::string address = config.placement.address;
  if (address.empty()) {
    // A searching placer gives up (with its reason) before this launch stops waiting for it.
    const std::string limit = std::to_string(std::max(1.0, 0.8 * timeout));
    placer = std::make_unique<Process>(
        "placer", std::vector<std::string>{bin_dir + "/psrt-placer", "--bind",
                                           "tcp://127.0.0.1:0", "--job-id", config.job.id,
                                           "--max-search-s", limit});
    address = await_prefix(*placer, "PSRT_LISTENING ", timeout);
  }
  // psrt-place gives up first, naming the placer's address (its default wait is 60 s).
  std::vector<std::string> argv{bin_dir + "/psrt-place", "--config", config_path,
                                "--placer-address", address, "--out", plan.string(),
                                "--timeout", std::to_string(std::max(0.5, 0.9 * timeout))};
  for (const auto& s : sets) {
    argv.push_back("--set");
    argv.push_back(s);
  }
  Process place("place", argv);
  await_success(place, timeout);
  if (placer) {
    placer->signal(SIGTERM);
    await_success(*placer, timeout);
  }
  return plan.string();
}

void check_plan_stages(const Config& config, const std::string& plan) {
  if (!config.placement.split()) return;
  std::size_t stages = 0;
  try {
    stages = YAML::LoadFile(plan)["stages"].size();
  } catch (const YAML::Exception& e) {
    throw ConfigError("placement.plan: " + plan + ": " + e.what());
  }
  if (stages != config.placement.partitions) {
    throw ConfigError("placement.partitions: " + std::to_string(config.placement.partitions) +
                      ", but " + config.placement.placer + "'s plan (" + plan + ") has " +
                      std::to_string(stages) + " stages: set placement.partitions and " +
                      "cluster.workers to match, or give a plan file");
  }
}

}  // namespace psrt::launch
