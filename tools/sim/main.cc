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
#include <string>
#include <vector>

#include "core/cli.h"
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

void print_row(const char* mode, const psrt::sim::SimResult& r) {
  std::printf("%-14s %10.3f %11.3f %9.3f %12.3f %9.3f  %-8s %6.3f\n", mode, r.iteration_ms,
              r.bounds.compute_ms, r.bounds.link_ms, r.bounds.critical_ms, r.bounds.max_ms(),
              r.bounds.binding(), r.ratio_to_bound());
}

void print_grouping(const psrt::ModelDesc& model, const std::string& spec,
                    const psrt::sim::GroupingChoice& c, const psrt::sim::SimResult& r) {
  std::printf("  grouping %s: %u messages per worker and iteration; %s\n", spec.c_str(), r.messages,
              c.grouping.describe(model).c_str());
  if (spec == "auto") {
    std::printf("  search: %u simulations in %.0f ms, started from %s; ungrouped %.3f ms\n",
                c.evaluations, c.search_ms, c.start.c_str(), c.ungrouped_ms);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"psrt-sim: predicted iteration time and its lower bounds for a model profile"};
  std::string profile, bandwidth = "1Gbit", mode = "preemptive", chunk = "4MiB", credit = "8MiB";
  std::string aggregation, calibration, grouping = "none";
  uint32_t workers = 4, servers = 2, iterations = 5;
  double scale = 0, latency_ms = 0, ack_latency_ms = 0;
  bool all_modes = false;
  std::string placement;
  app.add_option("--profile", profile, "model profile YAML (bench/profiles/*.yaml)")->required();
  app.add_option("--workers", workers, "number of workers")->check(CLI::Range(1u, 100000u));
  app.add_option("--servers", servers, "number of servers")->check(CLI::Range(1u, 100000u));
  app.add_option("--bandwidth", bandwidth,
                 "per-host link bandwidth, each direction "
                 "(1Gbit, 100Mbit, 125MB/s)");
  app.add_option("--mode", mode, "push mode: bigdl, fifo, fifo_chunked, nonpreemptive, preemptive");
  app.add_option("--chunk-bytes", chunk, "chunk size of the chunked modes (4MiB)");
  app.add_option("--credit-bytes", credit, "bytes in flight per sender (8MiB)");
  app.add_option("--scale", scale,
                 "shrink sizes, times, chunk and credit together (default: the profile's)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--latency-ms", latency_ms, "per-message latency")->check(CLI::NonNegativeNumber);
  app.add_option("--ack-latency-ms", ack_latency_ms, "from arrival to credit back at the sender")
      ->check(CLI::NonNegativeNumber);
  app.add_option(
      "--aggregation", aggregation,
      "server aggregation throughput, gradient bytes read (e.g. 10GB/s; default instant)");
  app.add_option("--iterations", iterations, "iterations to simulate; the last is reported")
      ->check(CLI::Range(2u, 1000u));
  app.add_flag("--all-modes", all_modes, "simulate every mode");
  app.add_option("--calibration", calibration,
                 "YAML of per-message and per-byte costs (psrt-bench-transport --calibrate)");
  app.add_option("--grouping", grouping,
                 "none, auto, size:BYTES, ddp:BYTES:FIRST, horovod:BYTES:MS or mgwfbp");
  app.add_option("--placement", placement,
                 "price a model-parallel plan (YAML from psrt-place) instead; uses --mode, "
                 "--servers, --chunk-bytes, --iterations");

  if (const auto rc = psrt::parse_command_line(app, argc, argv, "psrt-sim")) return *rc;

  psrt::sim::SimConfig config;
  psrt::ModelDesc model;
  std::vector<psrt::Mode> modes;
  try {
    config.workers = workers;
    config.servers = servers;
    config.iterations = iterations;
    config.latency_ms = latency_ms;
    config.ack_latency_ms = ack_latency_ms;
    config.bandwidth_bytes_per_s = bandwidth_arg("--bandwidth", bandwidth);
    config.chunk_bytes = size_arg("--chunk-bytes", chunk);
    config.credit_bytes = size_arg("--credit-bytes", credit);
    if (!aggregation.empty()) {
      config.aggregation_bytes_per_s = bandwidth_arg("--aggregation", aggregation);
    }
    if (!calibration.empty()) config.calibration = psrt::sim::load_calibration(calibration);
    std::string why;
    if (!psrt::parse_grouping(grouping, &why)) throw UsageError("--grouping: " + why);
    if (all_modes) {
      for (const auto& name : psrt::mode_names()) modes.push_back(*psrt::parse_mode(name));
    } else {
      const auto m = psrt::parse_mode(mode);
      if (!m)
        throw UsageError("--mode: '" + mode +
                         "' is not one of bigdl, fifo, fifo_chunked, "
                         "nonpreemptive, preemptive");
      modes.push_back(*m);
    }
    model = psrt::load_profile(profile, scale);
    const double s = scale > 0 ? scale : 1.0;
    // The chunk and credit sizes shrink with the model when --scale is given, so that a scaled
    // run keeps the same number of chunks (and the same compute-to-communication ratio).
    if (scale > 0) {
      config.chunk_bytes = std::max<uint64_t>(4, static_cast<uint64_t>(config.chunk_bytes * s));
      config.credit_bytes = std::max<uint64_t>(4, static_cast<uint64_t>(config.credit_bytes * s));
    }
  } catch (const std::exception& e) {
    std::cerr << "psrt-sim: " << e.what() << "\n";
    return 2;
  }

  if (!placement.empty()) {
    try {
      psrt::sim::PipelineOptions o;
      o.mode = modes.front();
      o.servers = servers;
      o.chunk_bytes = config.chunk_bytes;
      o.iterations = iterations;
      return psrt::tools::simulate_plan(model, placement, o);
    } catch (const std::exception& e) {
      std::cerr << "psrt-sim: " << e.what() << "\n";
      return 2;
    }
  }

  char scale_note[64] = "";
  if (scale > 0) std::snprintf(scale_note, sizeof scale_note, " (scale %g)", scale);
  std::printf(
      "profile %s%s: %llu parameters (%.1f MB), %zu layers, compute %.3f ms per iteration\n",
      model.name.c_str(), scale_note, static_cast<unsigned long long>(model.total_elements()),
      static_cast<double>(model.total_bytes()) / 1e6, model.layers.size(), model.compute_ms());
  std::printf("%u workers, %u servers, %s per host link; chunk %s, credit %s\n", config.workers,
              config.servers, psrt::sim::format_bandwidth(config.bandwidth_bytes_per_s).c_str(),
              psrt::sim::format_size(config.chunk_bytes).c_str(),
              psrt::sim::format_size(config.credit_bytes).c_str());
  if (!calibration.empty()) std::printf("calibration %s\n", calibration.c_str());
  std::printf("%-14s %10s %11s %9s %12s %9s  %-8s %6s\n", "mode", "iter_ms", "compute_ms",
              "link_ms", "critical_ms", "bound_ms", "binding", "ratio");
  try {
    double comm_ratio = 0;
    for (psrt::Mode m : modes) {
      config.mode = m;
      const auto choice =
          psrt::sim::choose_grouping(model, config, *psrt::parse_grouping(grouping));
      config.grouping = choice.grouping;
      const auto r = psrt::sim::simulate(model, config);
      print_row(psrt::mode_name(m), r);
      if (grouping != "none") print_grouping(model, grouping, choice, r);
      comm_ratio = r.bounds.link_ms / r.bounds.compute_ms;
    }
    std::printf("link bound / compute = %.2f (busiest link: %s); ratio = iter_ms / bound_ms\n",
                comm_ratio,
                psrt::sim::lower_bounds(model, psrt::sim::shard_map_for(model, config), config)
                    .busiest_link.c_str());
  } catch (const std::invalid_argument& e) {
    std::cerr << "psrt-sim: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
