#include "placement/placer.h"

#include <chrono>
#include <functional>

#include "placement/baselines.h"
#include "placement/netplacer.h"
#include "scheduler/sim/pipeline.h"

namespace psrt::placement {

namespace {

struct Entry {
  std::string name;
  std::function<Assignment(const Problem&)> run;
  std::string source;
};

const std::vector<Entry>& registry() {
  static const std::vector<Entry> kEntries = {
      {"netplacer", netplacer,
       "psrt: balanced compute/communication/parameter load under memory limits, analytic"},
      {"single", single_device, "everything on the fastest device it fits on"},
      {"even", even_layers, "even layer counts over the devices in order"},
      {"torchgpipe", torchgpipe_time,
       "torchgpipe balance_by_time (Kim et al. 2020): block partition of layer times"},
      {"pipedream", pipedream,
       "PipeDream partitioner (Narayanan et al. SOSP 2019): DP over max(compute, comm)"},
      {"baechi-metf", baechi_metf, "Baechi m-ETF (Jeon et al. SoCC 2020): memory-constrained ETF"},
      {"baechi-msct", baechi_msct, "Baechi m-SCT (Jeon et al. SoCC 2020): m-ETF + favourite child"},
      {"metis-like", balance_only,
       "METIS-like balance-only k-way partition (own code, not libmetis): compute balance + "
       "edge cut"},
      {"annealing", annealing, "simulated annealing scored by the pipeline simulator"},
      {"exhaustive", exhaustive, "every pipeline split (<= 12 layers) scored by the simulator"},
  };
  return kEntries;
}

const Entry* find(const std::string& name) {
  for (const auto& e : registry()) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

}  // namespace

const std::vector<std::string>& placer_names() {
  static const std::vector<std::string> kNames = [] {
    std::vector<std::string> names;
    for (const auto& e : registry()) names.push_back(e.name);
    return names;
  }();
  return kNames;
}

std::string placer_source(const std::string& name) {
  const Entry* e = find(name);
  return e ? e->source : "";
}

namespace {

// The placer's assignment, checked and priced.
Result<Plan> run_and_price(const Entry& e, const std::string& name, const Problem& problem) {
  const auto start = std::chrono::steady_clock::now();
  Assignment a = e.run(problem);
  const double search_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!a) return Status::error(name + ": infeasible: " + a.status().message());
  Plan plan;
  plan.model = problem.model.name;
  plan.placer = name;
  plan.device_of_layer = std::move(a.value());
  plan.setup = problem.setup;
  plan.devices = problem.devices;
  plan.search_ms = search_ms;
  const auto k = static_cast<uint32_t>(problem.devices.devices.size());
  const auto use = memory_use(problem.model, plan.device_of_layer, k, problem.setup);
  const std::string over = memory_violation(use, problem.devices);
  if (!over.empty()) return Status::error(name + ": infeasible: " + over);
  plan.cut_bytes = cut_bytes(problem.model, plan.device_of_layer, problem.setup.batch_size);
  plan.device_compute_ms.assign(k, 0.0);
  for (uint32_t l = 0; l < plan.device_of_layer.size(); ++l) {
    const uint32_t d = plan.device_of_layer[l];
    plan.device_compute_ms[d] += layer_ms(problem.model, l, problem.devices.devices[d]);
  }
  for (const auto& u : use) plan.device_memory_bytes.push_back(u.total());
  if (problem.options.price) plan.step_ms = simulated_step_ms(problem, plan.device_of_layer);
  return plan;
}

}  // namespace

Result<Plan> place(const std::string& name, const Problem& problem) {
  const Entry* e = find(name);
  if (!e) return Status::error("unknown placer '" + name + "'");
  if (problem.devices.devices.empty()) return Status::error("no devices");
  try {
    return run_and_price(*e, name, problem);
  } catch (const std::invalid_argument& err) {  // the simulator refuses the model (its size)
    return Status::error(name + ": " + err.what());
  }
}

}  // namespace psrt::placement
