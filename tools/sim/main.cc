// psrt-sim: predicts the steady-state iteration time of a profile on a simulated parameter-server
// cluster, next to its lower bounds, for one push mode or all of them.
//
//   psrt-sim --profile bench/profiles/vgg16.yaml --workers 4 --servers 2 --bandwidth 1Gbit
//            --mode preemptive --chunk-bytes 4MiB --credit-bytes 8MiB [--scale 0.05] [--all-modes]
//   psrt-sim --profile bench/profiles/vgg16.yaml --placement plan.yaml [--mode M] [--servers S]
//            (a model-parallel plan: pipeline, activation transfers, per-device memory)
//   --calibration FILE  the runtime's per-message and per-byte costs (bench/calibration/)
//   --grouping SPEC     none | auto | size:BYTES | ddp:BYTES:FIRST | horovod:BYTES:MS | mgwfbp;
//                       auto runs GradOptimizer's search and prints the groups it chose
//
// Bad arguments: one line on stderr, exit code 2.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <iostream>
#include <new>
#include <string>
#include <vector>

#include "core/config_limits.h"
#include "core/cli.h"
#include "core/sharding.h"
#include "core/config.h"
#include "core/grouping_spec.h"
#include "core/profile.h"
#include "core/status.h"
#include "placement_cmd.h"
#include "scheduler/mode.h"
#include "scheduler/sim/grad_optimizer.h"
#include "scheduler/sim/simulator.h"
#include "scheduler/sim/units.h"

namespace {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

uint64_t size_arg(const std::string& flag, const std::string& text) {
  const auto v = psrt::sim::parse_size(text);
  if (!v) {
    throw UsageError(flag + ": '" + text + "' is not a size (examples: 4MiB, 512KiB, 1000000)");
  }
  return *v;
}

double bandwidth_arg(const std::string& flag, const std::string& text) {
  const auto v = psrt::sim::parse_bandwidth(text);
  if (!v) {
    throw UsageError(flag + ": '" + text +
                     "' is not a bandwidth (examples: 1Gbit, 100Mbit, 125MB/s, 1GiB/s)");
  }
  return *v;
}

// The iterations the workers' grouping search simulates (its SimConfig's default).
const uint32_t kSearchIterations = psrt::sim::SimConfig{}.iterations;

void print_row(const char* mode, const psrt::sim::SimResult& r) {
  // a run's steady state: the mean after the first iteration
  std::printf("%-14s %10.3f %11.3f %9.3f %12.3f %9.3f  %-8s %6.3f\n", mode, r.steady_ms(),
              r.bounds.compute_ms, r.bounds.link_ms, r.bounds.critical_ms, r.bounds.max_ms(),
              r.bounds.binding(), r.ratio_to_bound());
}

void print_grouping(const psrt::ModelDesc& model, const std::string& spec,
                    const psrt::sim::GroupingChoice& c, const psrt::sim::SimResult& r,
                    uint32_t workers) {
  std::printf("  grouping %s: %u messages per worker and iteration; %s\n", spec.c_str(), r.messages,
              c.grouping.describe(model).c_str());
  if (spec == "auto") {
    const bool reduced = c.simulated_workers < workers && !c.verified;
    std::printf("  search: %s; ungrouped %.3f ms%s\n",
                psrt::sim::describe_search(c, workers).c_str(), c.ungrouped_ms,
                reduced ? " (on the simulated workers)" : "");
    std::string runners;
    for (const auto& a : c.alternatives) {
      char buf[64];
      std::snprintf(buf, sizeof buf, " %.3f ms", a.price_ms);
      runners += (runners.empty() ? "" : ",") + (" " + a.name) + buf;
    }
    // what the workers try online (scheduler.grouping_trials), after the choice
    if (!runners.empty()) std::printf("  runners-up (jittered):%s\n", runners.c_str());
  }
}

struct Args {
  std::string profile, bandwidth = "1Gbit", mode = "preemptive", chunk = "4MiB", credit = "8MiB";
  std::string batch = "64KiB";
  uint32_t host_cores = 0, job_host_cores = 0;
  std::string aggregation, calibration, grouping = "none";
  // servers 0: not given (2; with --placement one per device, as psrt-place priced the plan).
  uint32_t workers = 4, servers = 0, iterations = 5, simulated_workers = 0;
  double scale = 0, latency_ms = 0, ack_latency_ms = 0;
  bool all_modes = false, jittered = false, waits = false;
  std::string placement;
};

void add_options(CLI::App& app, Args& a) {
  app.add_option("--profile", a.profile, "model profile YAML (bench/profiles/*.yaml)")->required();
  app.add_option("--workers", a.workers, "number of workers")->check(CLI::Range(1u, 100000u));
  // The runtime's limit: beyond it the shard map's balancing took minutes (10000: 140 s).
  app.add_option("--servers", a.servers,
                 "number of servers, at most 1024 as in a job (default 2; with --placement one "
                 "per device of the plan, as psrt-place prices it)")
      ->check(CLI::Range(1u, unsigned(psrt::kMaxServers)));
  app.add_option("--simulated-workers", a.simulated_workers,
                 "simulate at most this many workers, each standing for workers / N (their "
                 "servers carry the whole load: fast for large clusters, a few % pessimistic; "
                 "default 0: every worker)")
      ->check(CLI::Range(0u, 100000u));
  app.add_option("--bandwidth", a.bandwidth,
                 "per-host link bandwidth, each direction "
                 "(1Gbit, 100Mbit, 125MB/s)");
  app.add_option("--mode", a.mode,
                 "push mode: bigdl, fifo, fifo_chunked, nonpreemptive, preemptive");
  // Not a default job's (1 MiB, 4 MiB): the tests of --waits and --simulated-workers hold at
  // these, and a default job is priced with --chunk-bytes 1MiB --credit-bytes 4MiB.
  app.add_option("--chunk-bytes", a.chunk,
                 "chunk size of the chunked modes (4MiB; scheduler.chunk_bytes' default is 1MiB)");
  app.add_option("--credit-bytes", a.credit,
                 "bytes in flight per sender (8MiB; scheduler.credit_bytes' default is 4MiB)");
  app.add_option("--batch-bytes", a.batch,
                 "adaptive batching of small messages, scheduler.batch_bytes (64KiB; 0: off)");
  app.add_option("--host-cores", a.host_cores,
                 "0: every process on cores of its own (a cluster); N: all on one machine of N "
                 "cores, each I/O thread's work waiting for a free one")
      ->check(CLI::Range(0u, psrt::kMaxHostCores));
  app.add_option("--job-host-cores", a.job_host_cores,
                 "the job's scheduler.host_cores: the cores the workers' grouping search assumes "
                 "(default 0: a machine per process, whatever --host-cores simulates)")
      ->check(CLI::Range(0u, psrt::kMaxHostCores));
  app.add_option("--scale", a.scale,
                 "shrink sizes, times, chunk and credit together (default: the profile's)")
      ->check(psrt::finite_in(0, 1e12));
  app.add_option("--latency-ms", a.latency_ms, "per-message latency")
      ->check(psrt::finite_in(0, 1e9));
  app.add_option("--ack-latency-ms", a.ack_latency_ms, "from arrival to credit back at the sender")
      ->check(psrt::finite_in(0, 1e9));
  app.add_option(
      "--aggregation", a.aggregation,
      "server aggregation throughput, gradient bytes read (e.g. 10GB/s; default instant)");
  app.add_option("--iterations", a.iterations,
                 "iterations to simulate; iter_ms is the mean of those after the first (--waits: "
                 "the next to last's waits); --grouping auto searches with 5, as the workers do")
      ->check(CLI::Range(2u, 1000u));
  app.add_flag("--all-modes", a.all_modes, "simulate every mode");
  app.add_option("--calibration", a.calibration,
                 "YAML of per-message and per-byte costs (psrt-bench-transport --calibrate)");
  app.add_option("--grouping", a.grouping,
                 "none, auto, size:BYTES, ddp:BYTES:FIRST, horovod:BYTES:MS or mgwfbp");
  app.add_flag("--jittered", a.jittered,
               "also print each row's price as --grouping auto weighs groupings: the mean at the "
               "links' bandwidth and 5% either side (two more simulations per row)");
  app.add_flag("--waits", a.waits,
               "also print, per row, the layers whose forward waited for parameters on worker 0 "
               "in the iteration iter_ms measures (the runtime's timeline shows them as \"wait "
               "LAYER\"), and the cores the I/O threads' calibrated work keeps busy");
  app.add_option("--placement", a.placement,
                 "price a model-parallel plan (YAML from psrt-place) instead; uses --mode, "
                 "--servers, --chunk-bytes, --iterations");
}

// What the arguments ask for; throws UsageError (or the profile's loader its error) when they
// make no sense.
struct Setup {
  psrt::sim::SimConfig config;
  psrt::ModelDesc model;
  std::vector<psrt::Mode> modes;
};

std::vector<psrt::Mode> modes_arg(const Args& a) {
  std::vector<psrt::Mode> modes;
  if (a.all_modes) {
    for (const auto& name : psrt::mode_names()) modes.push_back(*psrt::parse_mode(name));
    return modes;
  }
  const auto m = psrt::parse_mode(a.mode);
  if (!m)
    throw UsageError("--mode: '" + a.mode +
                     "' is not one of bigdl, fifo, fifo_chunked, "
                     "nonpreemptive, preemptive");
  modes.push_back(*m);
  return modes;
}

Setup setup(const Args& a) {
  Setup out;
  psrt::sim::SimConfig& config = out.config;
  config.workers = a.workers;
  config.servers = a.servers ? a.servers : 2;
  config.iterations = a.iterations;
  config.latency_ms = a.latency_ms;
  config.ack_latency_ms = a.ack_latency_ms;
  config.bandwidth_bytes_per_s = bandwidth_arg("--bandwidth", a.bandwidth);
  config.chunk_bytes = size_arg("--chunk-bytes", a.chunk);
  config.credit_bytes = size_arg("--credit-bytes", a.credit);
  config.batch_bytes = a.batch == "0" ? 0 : size_arg("--batch-bytes", a.batch);
  config.host_cores = a.host_cores;
  if (!a.aggregation.empty()) {
    config.aggregation_bytes_per_s = bandwidth_arg("--aggregation", a.aggregation);
  }
  if (!a.calibration.empty()) config.calibration = psrt::sim::load_calibration(a.calibration);
  std::string why;
  if (!psrt::parse_grouping(a.grouping, &why)) throw UsageError("--grouping: " + why);
  out.modes = modes_arg(a);
  out.model = psrt::load_profile(a.profile, a.scale);
  const double s = a.scale > 0 ? a.scale : 1.0;
  // The chunk and credit sizes shrink with the model when --scale is given, so that a scaled
  // run keeps the same number of chunks (and the same compute-to-communication ratio).
  if (a.scale > 0) {
    config.chunk_bytes = std::max<uint64_t>(4, static_cast<uint64_t>(config.chunk_bytes * s));
    config.credit_bytes = std::max<uint64_t>(4, static_cast<uint64_t>(config.credit_bytes * s));
    // At most what a batch may hold: past --scale 32 the default's scaled value was refused.
    config.batch_bytes = std::min<uint64_t>(
        psrt::kMaxGroupBytes, static_cast<uint64_t>(double(config.batch_bytes) * s));
  }
  return out;
}

// The cluster as simulated: all of it, or --simulated-workers standing for it.
psrt::sim::SimConfig simulated(const Args& a, const psrt::sim::SimConfig& config) {
  return a.simulated_workers == 0 ? config
                                  : psrt::sim::reduced_cluster(config, a.simulated_workers);
}

void print_header(const Args& a, const Setup& st) {
  const psrt::ModelDesc& model = st.model;
  const psrt::sim::SimConfig& config = st.config;
  char scale_note[64] = "";
  if (a.scale > 0) std::snprintf(scale_note, sizeof scale_note, " (scale %g)", a.scale);
  std::printf(
      "profile %s%s: %llu parameters (%.1f MB), %zu layers, compute %.3f ms per iteration\n",
      model.name.c_str(), scale_note, static_cast<unsigned long long>(model.total_elements()),
      static_cast<double>(model.total_bytes()) / 1e6, model.layers.size(), model.compute_ms());
  char reduced[96] = "";
  if (a.simulated_workers > 0 && a.simulated_workers < config.workers) {
    std::snprintf(reduced, sizeof reduced, " (simulated as %u, each standing for %.4g)",
                  a.simulated_workers, double(config.workers) / a.simulated_workers);
  }
  std::printf("%u workers%s, %u servers, %s per host link; chunk %s, credit %s\n", config.workers,
              reduced, config.servers,
              psrt::sim::format_bandwidth(config.bandwidth_bytes_per_s).c_str(),
              psrt::sim::format_size(config.chunk_bytes).c_str(),
              psrt::sim::format_size(config.credit_bytes).c_str());
  if (!a.calibration.empty()) std::printf("calibration %s\n", a.calibration.c_str());
  std::printf("%-14s %10s %11s %9s %12s %9s  %-8s %6s\n", "mode", "iter_ms", "compute_ms",
              "link_ms", "critical_ms", "bound_ms", "binding", "ratio");
}

// A large cluster takes a while to simulate: says so on stderr before starting, so that a long
// silence is not taken for a hang (the rows then appear one by one).
void warn_if_long(const Args& a, const Setup& st) {
  const double chunks =
      psrt::sim::sim_chunk_count(st.model, st.config.mode, st.config.chunk_bytes);
  const uint32_t workers = simulated(a, st.config).workers;
  const double messages = chunks * workers * st.config.iterations;
  // Past kMaxSimChunks the simulation refuses the model with its own message.
  if (messages < 1e6 || chunks > double(psrt::sim::kMaxSimChunks)) return;
  std::fprintf(stderr,
               "psrt-sim: %u workers x %.0f chunks x %u iterations, %.1f million pushes per "
               "mode: this may take minutes%s\n",
               workers, chunks, st.config.iterations, messages / 1e6,
               workers > 16 ? " (--simulated-workers 16 simulates 16 standing for them all)" : "");
}

// The layers whose forward waited on worker 0, in forward order, and the total of all.
void print_waits(const psrt::ModelDesc& model, const psrt::sim::SimResult& r) {
  double total = 0;
  std::string layers;
  for (std::size_t l = 0; l < r.forward_wait_ms.size(); ++l) {
    total += r.forward_wait_ms[l];
    if (!(r.forward_wait_ms[l] >= 0.005)) continue;  // listed from 0.01 ms as printed
    char ms[32];
    std::snprintf(ms, sizeof ms, " %.2f", r.forward_wait_ms[l]);
    layers += " " + model.layers[l].name + ms;
  }
  std::printf("  waits: %.2f ms in all;%s\n", total, layers.c_str());
  // What the host model makes of the daemons' CPU: compare with the cores a run measured.
  std::printf("  io: %.2f cores busy on average (the I/O threads' calibrated work, %.1f ms over "
              "%.1f ms)\n",
              r.end_ms > 0 ? r.io_work_ms / r.end_ms : 0.0, r.io_work_ms, r.end_ms);
}

// One row per mode, then the link-to-compute ratio; throws std::invalid_argument.
void simulate_modes(const Args& a, Setup& st) {
  psrt::sim::LowerBounds bounds;  // the last row's, for the closing line
  warn_if_long(a, st);
  for (psrt::Mode m : st.modes) {
    st.config.mode = m;
    const psrt::GroupingSpec spec = *psrt::parse_grouping(a.grouping);
    st.config.release_cycle_ms = 0;
    // Chosen as a job's workers choose it, with the cores the job was told of (its
    // scheduler.host_cores); the iteration is then simulated with --host-cores.
    psrt::sim::SimConfig as_job = st.config;
    as_job.host_cores = a.job_host_cores;
    as_job.iterations = kSearchIterations;
    const auto choice = psrt::sim::choose_grouping(st.model, as_job, spec);
    st.config.grouping = choice.grouping;
    // Horovod's groups leave on its cycle timer, in the runtime as here.
    if (spec.kind == psrt::GroupingSpec::Kind::kHorovod) st.config.release_cycle_ms = spec.cycle_ms;
    const auto r = psrt::sim::simulate(st.model, simulated(a, st.config));
    print_row(psrt::mode_name(m), r);
    if (a.grouping != "none") print_grouping(st.model, a.grouping, choice, r, st.config.workers);
    // What GradOptimizer's search minimises, for comparing groupings as it does.
    if (a.jittered) {
      psrt::sim::SimConfig priced = simulated(a, st.config);  // over the search's iterations
      priced.iterations = kSearchIterations;
      const double nominal = priced.iterations == st.config.iterations ? r.iteration_ms : -1;
      std::printf("  jittered: %.3f ms (mean at the links' bandwidth x%.2f, x%.2f, x%.2f)\n",
                  psrt::sim::jittered_ms(st.model, priced, nullptr, nominal),
                  psrt::sim::kJitter[0], psrt::sim::kJitter[1], psrt::sim::kJitter[2]);
    }
    if (a.waits) print_waits(st.model, r);
    std::fflush(stdout);  // each row as it is done, through a pipe too
    bounds = r.bounds;
  }
  if (bounds.compute_ms > 0) {
    std::printf("link bound / compute = %.2f (busiest link: %s); ratio = iter_ms / bound_ms\n",
                bounds.link_ms / bounds.compute_ms, bounds.busiest_link.c_str());
  } else {  // a profile without times (inf or nan)
    std::printf("link bound %.3f ms, no compute (busiest link: %s); ratio = iter_ms / bound_ms\n",
                bounds.link_ms, bounds.busiest_link.c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"psrt-sim: predicted iteration time and its lower bounds for a model profile"};
  Args args;
  add_options(app, args);
  if (const auto rc = psrt::parse_command_line(app, argc, argv, "psrt-sim")) return *rc;

  Setup st;
  try {
    st = setup(args);
  } catch (const std::exception& e) {
    std::cerr << "psrt-sim: " << e.what() << "\n";
    return 2;
  }

  if (!args.placement.empty()) {
    try {
      psrt::sim::PipelineOptions o;
      o.mode = st.modes.front();
      o.servers = args.servers;
      o.chunk_bytes = st.config.chunk_bytes;
      o.iterations = args.iterations;
      o.calibration = st.config.calibration;
      o.host_cores = st.config.host_cores;
      return psrt::tools::simulate_plan(st.model, args.placement, o);
    } catch (const std::exception& e) {
      std::cerr << "psrt-sim: " << e.what() << "\n";
      return 2;
    }
  }

  print_header(args, st);
  try {
    simulate_modes(args, st);
  } catch (const std::invalid_argument& e) {
    std::cerr << "psrt-sim: " << e.what() << "\n";
    return 2;
  } catch (const std::bad_alloc&) {
    // The simulation keeps a queue per (server, worker): 20000 workers x 1024 servers took GBs
    // and ended in std::terminate.
    std::cerr << "psrt-sim: out of memory simulating " << st.config.workers << " workers and "
              << st.config.servers
              << " servers (memory grows with their product): fewer of either\n";
    return 1;
  }
  return 0;
}
