#include "tools/launch/model_check.h"

#include "core/profile.h"
#include "core/stage_layout.h"
#include "engine/net_spec.h"

namespace psrt::launch {

void check_model(const Config& config, bool read_files) {
  if (!read_files && config.model.backend == "replay") return;
  const ModelDesc model = config.model.backend == "replay"
                              ? load_profile(config.model.profile, config.model.scale)
                              : engine::describe_network(engine::net_spec(config));
  Config laid_out = config;
  // plan: auto is made after this; without read_files the plan file is not read either.
  if (laid_out.placement.plan == "auto" || !read_files) laid_out.placement.plan.clear();
  (void)stage_layout(laid_out, model);
}

}  // namespace psrt::launch
