// psrt-place: makes a model-parallel plan, prints it as a table and writes it as YAML (the format
// psrt-sim --placement prices and the runtime executes), in-process or by asking a running
// psrt-placer.
//
//   psrt-place --config job.yaml [--out plan.yaml] [--placer-address tcp://...]
//   psrt-place --profile bench/profiles/vgg16.yaml --devices devices.yaml [--placer pipedream]
//   psrt-place --arch vgg-small --batch 64 --write-profile vgg-small.yaml   (the model, no plan)
//   psrt-place ... --calibration bench/calibration/default.yaml --host-cores 2   (the price with
//     the runtime's I/O work on shared cores; NetPlacer's plan is the same, the placers that
//     search by simulation search with it)
//
// The model is the job's (model.profile for replay, model.arch for native) or --profile / --arch;
// the devices are the job's placement section or a --devices file with the same keys. Bad
// arguments: one line on stderr, exit 2; no plan fits, or the plan or profile cannot be written
// (whole or not at all): the reason on stderr, exit 1.
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <span>

#include "config/job_config.h"
#include "core/cli.h"
#include "core/config.h"
#include "core/config_limits.h"
#include "core/durable_file.h"
#include "core/endpoint_form.h"
#include "core/plan_yaml.h"
#include "core/profile.h"
#include "core/status.h"
#include "core/yaml_reader.h"
#include "engine/net_spec.h"
#include "engine/network.h"
#include "placement/placer.h"
#include "placement/plan_table.h"
#include "placement/service/client.h"

namespace {

using namespace psrt;

ModelDesc native_model(const engine::NetSpec& spec, uint32_t batch) {
  ModelDesc m = engine::describe_network(spec);
  m.name = spec.arch;
  set_times_from_flops(m, batch, 10000);  // as gen_profiles.py: 10 TFLOPS
  return m;
}

// The placement keys of a --devices file: a mapping with devices, link, server_link, link_pairs
// and optionally batch_size, micro_batches, optimizer.
void read_devices_file(const std::string& path, placement::Request& r) {
  YAML::Node root;
  const std::string text = read_yaml_file(path, "a devices file (--devices)", 64ull << 20);
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw ConfigError(path + ": " + e.what());
  }
  const YamlReader reader(root, "", path);
  r.devices = read_devices(reader);
  r.setup = read_setup(reader, r.setup);  // what the file leaves out stays the job's (--config)
  reader.reject_unknown();
}

// `--out`, checked before the search (minutes for a large model): its folder must take a file.
void check_out(const std::string& path) {
  if (path.empty()) return;
  std::error_code ec;
  const auto kind = std::filesystem::status(path, ec).type();
  if (kind != std::filesystem::file_type::regular &&
      kind != std::filesystem::file_type::directory &&
      kind != std::filesystem::file_type::not_found && !ec) {  // /dev/stdout, a FIFO: streamed
    if (::access(path.c_str(), W_OK) == 0) return;
    throw ConfigError("--out " + path + ": cannot write it: " + std::strerror(errno));
  }
  const std::filesystem::path p(path);
  const std::filesystem::path folder = p.has_parent_path() ? p.parent_path() : ".";
  if (!std::filesystem::is_directory(folder, ec)) {
    throw ConfigError("--out " + path + ": " + folder.string() + " is not a folder");
  }
  if (::access(folder.c_str(), W_OK) != 0) {
    throw ConfigError("--out " + path + ": cannot write in " + folder.string() + ": " +
                      std::strerror(errno));
  }
}

// `text` as the file `path`, whole or not at all (an earlier file there stays as it was), or
// streamed to a device such as /dev/stdout (core/durable_file.h, write_output); a failure says
// which file and the system's reason. Before, a full disk left an empty plan and said "plan
// written".
bool write_file(const std::string& path, const std::string& text) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(text.data());
  const std::span<const uint8_t> whole(bytes, text.size());
  if (const Status st = write_output(path, {&whole, 1}); !st) {
    std::cerr << "psrt-place: " << st.message() << "\n";
    return false;
  }
  return true;
}

// The plan as a table on stdout and, with `out`, as YAML there. Returns the exit code.
int print_plan(const Plan& plan, const ModelDesc& model, const std::string& out) {
  std::printf("%s", placement::plan_table(plan, model).c_str());
  if (out.empty()) return 0;
  if (!write_file(out, plan_to_yaml(plan, model))) return 1;
  std::printf("plan written to %s\n", out.c_str());
  return 0;
}

// A searching placer's progress on stderr, every 10 s of a long search.
std::function<void(uint64_t, uint64_t)> progress_printer(const std::string& placer) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  auto last = std::make_shared<Clock::time_point>(start);
  return [placer, start, last](uint64_t done, uint64_t total) {
    const auto now = Clock::now();
    if (now - *last < std::chrono::seconds(10)) return;
    *last = now;
    const double s = std::chrono::duration<double>(now - start).count();
    if (total) {
      std::fprintf(stderr, "psrt-place: %s: %llu of %llu plans simulated (%.0f s)\n",
                   placer.c_str(), (unsigned long long)done, (unsigned long long)total, s);
    } else {
      std::fprintf(stderr, "psrt-place: %s: %llu plans simulated (%.0f s)\n", placer.c_str(),
                   (unsigned long long)done, s);
    }
  };
}

// What the command line says.
struct Args {
  std::string config_path, profile, arch, devices_path, out, address, placer, calibration;
  std::string job_id = "psrt", mode = "preemptive", write_profile;
  uint32_t servers = 0, micro_batches = 0, batch = 0, host_cores = 0;
  std::vector<std::string> sets;
  double timeout_s = 60, max_search_s = 0;
  double scale = 0;                    // the job's model.scale (replay)
  std::optional<engine::NetSpec> net;  // the job's native network (mlp widths, custom layers)
};

void add_options(CLI::App& app, Args& a) {
  app.add_option("--config", a.config_path, "job YAML: model and placement section");
  app.add_option("-s,--set", a.sets, "override a key of the job YAML: a.b=value (repeatable)");
  app.add_option("--profile", a.profile, "model profile (instead of the job's model)");
  app.add_option("--arch", a.arch,
                 "native network: mlp, lenet5 or vgg-small (times from FLOPs); a job's own "
                 "(custom layers, mlp widths) comes with --config");
  app.add_option("--devices", a.devices_path,
                 "YAML with devices, link, server_link, batch_size, ...");
  app.add_option("--placer", a.placer, "netplacer (default) or a baseline");
  app.add_option("--placer-address", a.address, "ask this running psrt-placer (tcp://HOST:PORT)")
      ->check([](const std::string& v) { return connect_endpoint_problem(v); });
  app.add_option("--job-id", a.job_id, "job id for the placer");
  app.add_option("--mode", a.mode, "push mode the plan is priced in");
  app.add_option("--servers", a.servers, "parameter servers (default: one per device)")
      ->check(CLI::Range(0, kMaxServers));
  app.add_option("--calibration", a.calibration,
                 "price the plan with the runtime's I/O costs (bench/calibration/*.yaml)");
  app.add_option("--host-cores", a.host_cores,
                 "the processes share this many cores when priced (0: a machine each)")
      ->check(CLI::Range(0u, psrt::kMaxHostCores));
  // The ranges a plan's readers take (core/plan_yaml.cc): a plan they refuse was written.
  app.add_option("--micro-batches", a.micro_batches, "override micro_batches")
      ->check(CLI::Range(1u, 4096u));
  app.add_option("--batch", a.batch, "override batch_size")->check(CLI::Range(1u, 1u << 20));
  app.add_option("--timeout", a.timeout_s, "seconds to wait for the placer")
      ->check(finite_in(0.001, 86400));
  app.add_option("--max-search-s", a.max_search_s,
                 "annealing and exhaustive stop with an error past this many seconds (0: none)")
      ->check(finite_in(0, 86400));
  app.add_option("--out", a.out, "write the plan as YAML here");
  app.add_option("--write-profile", a.write_profile,
                 "write the model as a profile (native: times from FLOPs at 10 TFLOPS) and exit");
}

// The job's model and placement section, where --config names one (the flags override it).
void read_job(Args& a, placement::Request& r) {
  const Config c = load_config(a.config_path, a.sets);
  r.setup.batch_size = static_cast<uint32_t>(c.job.batch_size);
  r.setup.micro_batches = c.placement.micro_batches;
  r.setup.optimizer = c.optimizer.type == "adam"  ? OptimizerKind::kAdam
                      : c.optimizer.momentum > 0 ? OptimizerKind::kMomentum
                                                  : OptimizerKind::kSgd;
  r.devices = c.placement.devices;
  r.placer = c.placement.placer;
  if (a.address.empty() && !c.placement.address.empty()) a.address = c.placement.address;
  a.job_id = c.job.id;
  if (a.profile.empty() && a.arch.empty()) {
    if (c.model.backend == "replay") {
      a.profile = c.model.profile;
      a.scale = c.model.scale;
    } else {
      a.arch = c.model.arch;
      a.net = engine::net_spec(c);
    }
  }
}

// The request the arguments make; throws ConfigError (and the loaders' errors) on a bad one.
placement::Request make_request(Args& a) {
  placement::Request r;
  if (a.config_path.empty() && !a.sets.empty()) {  // ignored, unknown keys included, exit 0
    throw ConfigError("--set " + a.sets.front() +
                      ": --set overrides a key of the job file, so it "
                      "needs --config (without one, give the flags: --batch, --micro-batches, "
                      "--devices, --placer)");
  }
  if (!a.config_path.empty()) read_job(a, r);
  if (!a.devices_path.empty()) read_devices_file(a.devices_path, r);
  if (a.batch) r.setup.batch_size = a.batch;
  if (a.micro_batches) r.setup.micro_batches = a.micro_batches;
  if (r.setup.micro_batches > r.setup.batch_size) {  // a plan its own readers would refuse
    throw ConfigError("--micro-batches: " + std::to_string(r.setup.micro_batches) +
                      " micro-batches of a batch of " + std::to_string(r.setup.batch_size));
  }
  if (!a.placer.empty()) r.placer = a.placer;
  const auto& names = placement::placer_names();
  if (!r.placer.empty() && std::find(names.begin(), names.end(), r.placer) == names.end()) {
    std::string known;
    for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
    throw ConfigError("--placer: '" + r.placer + "' is not a placer (" + known + ")");
  }
  if (a.profile.empty() == a.arch.empty()) {
    throw ConfigError("give one model: --profile, --arch or --config");
  }
  if (a.profile.empty() && !a.net) a.net.emplace().arch = a.arch;
  r.model = a.profile.empty() ? native_model(*a.net, r.setup.batch_size)
                              : load_profile(a.profile, a.scale);
  if (!a.write_profile.empty()) return r;
  if (r.devices.devices.empty()) {
    throw ConfigError("no devices: give --devices or --config with placement.devices");
  }
  const auto m = parse_mode(a.mode);
  if (!m) throw ConfigError("--mode: '" + a.mode + "' is not a push mode");
  r.options.mode = *m;
  r.options.servers = a.servers ? a.servers : static_cast<uint32_t>(r.devices.devices.size());
  if (!a.calibration.empty()) r.options.calibration = sim::load_calibration(a.calibration);
  r.options.host_cores = a.host_cores;
  r.options.max_search_s = a.max_search_s;
  r.options.progress = progress_printer(r.placer.empty() ? "netplacer" : r.placer);
  if ((!a.calibration.empty() || a.host_cores || a.max_search_s > 0) && !a.address.empty()) {
    throw ConfigError("--calibration, --host-cores and --max-search-s are for a plan made here, "
                      "not a placer's (psrt-placer --max-search-s sets its own limit)");
  }
  return r;
}

// The model as a profile at `path`. Returns the exit code.
int write_model_profile(const ModelDesc& model, const std::string& path) {
  if (!write_file(path, profile_yaml(model))) return 1;
  std::printf("profile of %s written to %s\n", model.name.c_str(), path.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"psrt-place: a model-parallel plan as a table and YAML"};
  Args a;
  add_options(app, a);
  if (const auto rc = psrt::parse_command_line(app, argc, argv, "psrt-place")) return *rc;
  placement::Request r;
  try {
    r = make_request(a);
    check_out(a.out);
    if (!a.write_profile.empty()) return write_model_profile(r.model, a.write_profile);
  } catch (const std::exception& e) {
    std::cerr << "psrt-place: " << e.what() << "\n";
    return 2;
  }
  const Result<Plan> plan =
      a.address.empty() ? placement::place(r.placer, {r.model, r.devices, r.setup, r.options})
                        : placement::ask_placer(a.address, a.job_id, r, a.timeout_s);
  if (!plan) {
    std::cerr << "psrt-place: " << plan.status().message() << "\n";
    return 1;
  }
  return print_plan(*plan, r.model, a.out);
}
