#include "placement_cmd.h"

#include <algorithm>
#include <cstdio>

#include "core/config_limits.h"
#include "core/plan_yaml.h"

namespace psrt::tools {

int simulate_plan(const ModelDesc& model, const std::string& plan_path,
                  const sim::PipelineOptions& options) {
  const Plan plan = load_plan(plan_path, model);
  sim::PipelineOptions o = options;
  // Not given: one per device, as psrt-place priced the plan (2 made a 66% "miss" of its
  // prediction that was only this default).
  if (o.servers == 0) {
    o.servers = uint32_t(std::min<std::size_t>(plan.devices.devices.size(), kMaxServers));
  }
  const auto r = sim::simulate_pipeline(model, plan, o);
  std::printf("plan %s (%s) for %s: %zu devices, %u servers, batch %u in %u micro-batches, "
              "mode %s\n",
              plan_path.c_str(), plan.placer.c_str(), model.name.c_str(),
              plan.devices.devices.size(), o.servers, plan.setup.batch_size,
              plan.setup.micro_batches, mode_name(o.mode));
  std::printf("%-12s %7s %12s %14s %14s %5s\n", "device", "layers", "compute_ms", "memory_bytes",
              "capacity", "fits");
  for (std::size_t d = 0; d < plan.devices.devices.size(); ++d) {
    std::size_t layers = 0;
    for (uint32_t x : plan.device_of_layer) layers += x == d;
    const auto& dev = plan.devices.devices[d];
    const uint64_t mem = r.memory[d].total();
    std::printf("%-12s %7zu %12.3f %14llu %14llu %5s\n", dev.name.c_str(), layers,
                r.device_busy_ms[d], static_cast<unsigned long long>(mem),
                static_cast<unsigned long long>(dev.memory_bytes),
                mem <= dev.memory_bytes ? "yes" : "NO");
  }
  std::printf("step_ms %.3f  cut_bytes %llu", r.step_ms,
              static_cast<unsigned long long>(r.cut_bytes));
  if (plan.step_ms > 0) std::printf("  (the plan predicted %.3f)", plan.step_ms);
  std::printf("\n");
  if (!r.fits) {
    std::printf("over memory: %s\n", r.over_memory.c_str());
    return 1;
  }
  return 0;
}

}  // namespace psrt::tools
