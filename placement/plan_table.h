// A plan as a text table: one row per stage (device, layers, compute, memory) and a summary line.
#pragma once

#include <string>

#include "core/model.h"
#include "core/plan.h"

namespace psrt::placement {

std::string plan_table(const Plan& plan, const ModelDesc& model);

}  // namespace psrt::placement
