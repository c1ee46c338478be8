// Worker 0's grouping as it travels to every worker (wire::GroupingPlan: in its REGISTER, then
// in every worker's MEMBERSHIP), and back. Worker 0 alone chooses the job's grouping, before it
// registers: the search runs once per job instead of once per worker (four workers searching at
// once on two cores took four times as long), and every worker groups alike by construction,
// whatever its own calibration file, core count or scheduler.grouping says.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/grouping_spec.h"
#include "core/wire.h"
#include "scheduler/sim/grad_optimizer.h"

namespace psrt {

// The grouping every worker runs: candidates[0] from the start; with more, the online trials
// (worker/grouping_trials.h) run them in this order, trial_iterations timed iterations each.
struct JobGrouping {
  std::string spec;                            // worker 0's scheduler.grouping
  std::vector<sim::NamedGrouping> candidates;  // at least one
  uint32_t trial_iterations = 0;
  std::string search;  // how worker 0's search went (auto), for the log
};

// Worker 0's plan for `spec_text` (its scheduler.grouping): the choice, and for auto its
// runners-up up to `trials` candidates in all when trials >= 2 (scheduler.grouping_trials).
wire::GroupingPlan grouping_plan(const std::string& spec_text, const sim::GroupingChoice& choice,
                                 uint32_t workers, uint32_t trials, uint32_t trial_iterations);

// A plan from the membership, for a model of `tensors` tensors. Throws std::invalid_argument
// naming what is wrong (core/wire_grouping.h).
JobGrouping job_grouping(const wire::GroupingPlan& plan, uint32_t tensors);

}  // namespace psrt
