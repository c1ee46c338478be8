#include "tools/launch/plan_step.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>

#include <yaml-cpp/yaml.h>

#include "core/status.h"
#include "tools/launch/child.h"

namespace psrt::launch {

namespace {

// Reads the child's lines (echoed with its name) until one starts with `prefix` (returned) or, for
// an empty prefix, until it exits. Throws JobError at the deadline or when it exits first.
std::string pump(Child& c, const std::string& prefix, double seconds) {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
  while (std::chrono::steady_clock::now() < deadline) {
    std::vector<pollfd> fds;
    for (int fd : {c.out_fd(), c.err_fd()}) {
      if (fd >= 0) fds.push_back({fd, POLLIN, 0});
    }
    if (fds.empty()) {
      if (const auto code = c.poll_exit()) {
        if (prefix.empty() && *code == 0) return "";
        throw JobError(c.name() + " exited with code " + std::to_string(*code));
      }
    }
    // With both pipes closed the child is exiting: the short wait is for its reaping only.
    ::poll(fds.data(), fds.size(), fds.empty() ? 20 : 200);
    for (const auto& f : fds) {
      if (!(f.revents & (POLLIN | POLLHUP | POLLERR))) continue;
      for (const auto& line : c.read_lines(f.fd)) {
        if (!prefix.empty() && line.rfind(prefix, 0) == 0) return line.substr(prefix.size());
        std::printf("%-9s| %s\n", c.name().c_str(), line.c_str());
        std::fflush(stdout);
      }
    }
  }
  throw JobError(c.name() + " did not finish within " + std::to_string(int(seconds)) + " s");
}

}  // namespace

std::string make_plan(const Config& config, const std::string& config_path,
                      const std::vector<std::string>& sets, const std::string& bin_dir) {
  const double timeout = config.cluster.start_timeout_s;
  std::unique_ptr<Child> placer;
  std::string address = config.placement.address;
  if (address.empty()) {
    placer = std::make_unique<Child>(
        "placer", std::vector<std::string>{bin_dir + "/psrt-placer", "--bind",
                                           "tcp://127.0.0.1:0", "--job-id", config.job.id});
    address = pump(*placer, "PSRT_LISTENING ", timeout);
  }
  const auto plan = std::filesystem::temp_directory_path() /
                    ("psrt-" + config.job.id + "-" + std::to_string(::getpid()) + "-plan.yaml");
  std::vector<std::string> argv{bin_dir + "/psrt-place", "--config", config_path,
                                "--placer-address", address, "--out", plan.string()};
  for (const auto& s : sets) {
    argv.push_back("--set");
    argv.push_back(s);
  }
  Child place("place", argv);
  pump(place, "", timeout);
  if (placer) {
    placer->signal(SIGTERM);
    pump(*placer, "", timeout);
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
