// psrt-bench-placement: every placer on VGG-16, ResNet-50, Inception-v3, GNMT-like, LeNet-5 and
// vgg-small over 2, 4 and 8 devices, homogeneous and heterogeneous: simulated step time, peak
// device memory, cut bytes and search time, as a table and CSV with the best marked; NetPlacer's
// search time against graph size on synthetic DAGs; a gnuplot chart; MET/MISSED for the targets.
//
//   psrt-bench-placement [--smoke] [--out DIR] [--profiles DIR] [--memory-gib 3] [--anneal-steps N]
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>

#include "cases.h"
#include "core/cli.h"
#include "core/status.h"
#include "placement/placer.h"
#include "placement/plan_table.h"
#include "report.h"

using namespace psrt;

namespace {

std::vector<bench::Row> run_case(const ModelDesc& model, uint32_t k, bool het, uint64_t memory,
                                 const placement::PlacerOptions& options) {
  const DeviceSet devices = bench::make_devices(k, het, memory);
  TrainingSetup setup;
  setup.batch_size = 32;
  setup.micro_batches = 4;
  std::vector<bench::Row> rows;
  for (const auto& name : placement::placer_names()) {
    if (name == "exhaustive" && model.layers.size() > options.exhaustive_max_layers) continue;
    bench::Row r{model.name, k, het, name};
    const auto plan = placement::place(name, {model, devices, setup, options});
    if (plan) {
      r.feasible = true;
      r.step_ms = plan->step_ms;
      r.search_ms = plan->search_ms;
      r.cut_bytes = plan->cut_bytes;
      for (std::size_t d = 0; d < devices.devices.size(); ++d) {
        r.peak_bytes = std::max(r.peak_bytes, plan->device_memory_bytes[d]);
        r.over_memory |= plan->device_memory_bytes[d] > devices.devices[d].memory_bytes;
      }
      if (name == "netplacer" && model.name == "vgg16" && k == 4 && !het) {
        std::printf("\nNetPlacer's plan for VGG-16 on 4 devices:\n%s\n",
                    placement::plan_table(*plan, model).c_str());
      }
    } else {
      r.error = plan.status().message();
    }
    rows.push_back(r);
  }
  return rows;
}

double dag_search_ms(uint32_t n, const placement::PlacerOptions& options) {
  const ModelDesc m = bench::synthetic_dag(n, 7);
  const DeviceSet devices = bench::make_devices(8, true, 1ull << 40);
  TrainingSetup setup;
  setup.micro_batches = 4;
  auto o = options;
  o.price = false;
  const auto plan = placement::place("netplacer", {m, devices, setup, o});
  if (!plan) throw std::runtime_error(plan.status().message());
  return plan->search_ms;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"psrt-bench-placement: NetPlacer against the baseline placers"};
  bool smoke = false;
  std::string out = ".", profiles = PSRT_SOURCE_DIR "/bench/profiles";
  double memory_gib = 3;
  placement::PlacerOptions options;
  options.servers = 8;  // one server per device at most: each device's server link in full
  app.add_flag("--smoke", smoke, "a few small cases (seconds), for the test suite");
  app.add_option(
         "--out", out,
         "folder for placement.csv, placement_scaling.dat, placement_chart.dat, placement.gp")
      ->check([](const std::string& dir) {  // "" wrote /placement.csv
        return dir.empty() ? std::string("an empty folder name (use . for this one)")
                           : std::string();
      });
  app.add_option("--profiles", profiles, "bench/profiles");
  app.add_option("--memory-gib", memory_gib, "memory of a full device (heterogeneous: half)")
      ->check(psrt::finite_in(1e-6, 1e9));
  app.add_option("--anneal-steps", options.anneal_steps, "simulator calls of the annealing");
  if (const auto rc = psrt::parse_command_line(app, argc, argv, "psrt-bench-placement")) {
    return *rc;
  }
  std::vector<std::string> models = {"vgg16", "resnet50", "inception_v3", "gnmt", "lenet5",
                                     "vgg-small"};
  std::vector<uint32_t> ks = {2, 4, 8};
  std::vector<uint32_t> sizes = {100, 1000, 10000};
  if (smoke) {
    models = {"lenet5", "vgg16"};
    ks = {2};
    sizes = {100, 1000};
    options.anneal_steps = std::min<uint32_t>(options.anneal_steps, 100);
  }
  if (!out.empty()) {  // made before the cases run, so that a bad --out fails first
    std::error_code ec;
    std::filesystem::create_directories(out, ec);
    if (ec) {
      std::fprintf(stderr, "psrt-bench-placement: --out %s: %s\n", out.c_str(),
                   ec.message().c_str());
      return 2;
    }
  }
  const auto memory = static_cast<uint64_t>(memory_gib * 1073741824.0);
  std::vector<bench::Row> rows;
  try {
    for (const auto& name : models) {
      const ModelDesc m = bench::load_model(name, profiles);
      for (uint32_t k : ks) {
        for (bool het : {false, true}) {
          auto r = run_case(m, k, het, memory, options);
          bench::print_case(r);
          rows.insert(rows.end(), r.begin(), r.end());
        }
      }
    }
    std::vector<std::pair<uint32_t, double>> scaling;
    for (uint32_t n : sizes) scaling.emplace_back(n, dag_search_ms(n, options));
    if (const Status st = bench::write_outputs(out, rows, scaling); !st) {
      std::cerr << "psrt-bench-placement: " << st.message() << "\n";
      return 1;
    }
    bench::print_targets(rows, scaling, smoke);
  } catch (const std::exception& e) {
    std::cerr << "psrt-bench-placement: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
