// The checks on worker 0's grouping plan (wire::GroupingPlan), run by the coordinator on the
// REGISTER that carries it and by every worker on the MEMBERSHIP that brings it: a plan that
// names keys the model lacks, or groups out of order, is refused before anything uses it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/wire.h"

namespace psrt {

constexpr int kMaxGroupingCandidates = 16;  // the choice and its runners-up
constexpr std::size_t kMaxGroupingText = 1024;  // spec, names, the search's description

// What is wrong with `plan` for a model of `tensors` tensors; nullopt when it is usable: 1 to
// kMaxGroupingCandidates candidates, each with group starts 0, then ascending, below `tensors`,
// a finite price >= 0 and a name; trial_iterations 1-100 when there are runners-up; a spec that
// parses (scheduler.grouping); every text at most kMaxGroupingText bytes without control
// characters (they go into logs).
std::optional<std::string> grouping_plan_error(const wire::GroupingPlan& plan, uint32_t tensors);

}  // namespace psrt
