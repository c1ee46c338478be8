#include "placement/plan_table.h"

#include <cstdio>

#include "core/plan_yaml.h"

namespace psrt::placement {

std::string plan_table(const Plan& plan, const ModelDesc& model) {
  std::string out;
  char line[512];
  std::snprintf(
      line, sizeof line,
      "| stage | device | GFLOPS | layers | first .. last | compute ms | memory GB / of |\n"
      "| --- | --- | ---: | ---: | --- | ---: | ---: |\n");
  out += line;
  const auto stages = plan_stages(model, plan.device_of_layer);
  for (std::size_t s = 0; s < stages.size(); ++s) {
    const auto& st = stages[s];
    const auto& dev = plan.devices.devices[st.device];
    const double ms =
        st.device < plan.device_compute_ms.size() ? plan.device_compute_ms[st.device] : 0;
    const double mem = st.device < plan.device_memory_bytes.size()
                           ? static_cast<double>(plan.device_memory_bytes[st.device]) / 1e9
                           : 0;
    std::snprintf(line, sizeof line, "| %zu | %s | %.0f | %zu | %s .. %s | %.3f | %.3f / %.3f |\n",
                  s, dev.name.c_str(), dev.gflops, st.layers.size(),
                  model.layers[st.layers.front()].name.c_str(),
                  model.layers[st.layers.back()].name.c_str(), ms, mem,
                  static_cast<double>(dev.memory_bytes) / 1e9);
    out += line;
  }
  std::snprintf(line, sizeof line,
                "%s by %s: %zu stages, predicted step %.3f ms, cut %.3f MB per step, "
                "search %.3f ms, %u micro-batches of %u\n",
                model.name.c_str(), plan.placer.c_str(), stages.size(), plan.step_ms,
                static_cast<double>(plan.cut_bytes) / 1e6, plan.search_ms,
                plan.setup.micro_batches, plan.setup.micro_batch_size());
  out += line;
  return out;
}

}  // namespace psrt::placement
