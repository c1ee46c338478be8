// GradOptimizer: chooses the gradient grouping (scheduler/grouping.h) that minimises the
// simulated iteration time, and MG-WFBP's merge rule, the baseline that needs a cost model.
//
// The search. The simulator's iteration time is not a sum over groups (a group's cost depends on
// what the link, the servers' I/O threads and the credit are doing when it is ready), so dynamic
// programming over contiguous groupings with the simulator as cost would need the simulator for
// every (start, end) pair at every prefix: O(n^2) simulations of the whole iteration, far too
// slow for 300 tensors. Instead:
//   1. candidates: no grouping, MG-WFBP's merge rule, size:B for B in a ladder of powers of two
//      from 4 KiB to the model's size, PyTorch DDP's buckets (25 MiB, first 1 MiB) and Horovod
//      fusion (64 MiB / 5 ms, 128 MiB / 1 ms); each one simulated, the fastest kept;
//   2. local search from it: for each group boundary, in key order, try removing it (merging the
//      two neighbours) and moving it one tensor either way; keep a change when the simulated
//      iteration is faster; repeat passes until one changes nothing or the evaluation budget is
//      spent.
// The result is never slower (simulated) than any candidate, so never slower than the baselines
// it includes. Deterministic: the budget counts simulations, not time, so every process of a job
// computes the same groups.
#pragma once

#include <cstdint>
#include <string>

#include "core/grouping_spec.h"
#include "core/model.h"
#include "scheduler/grouping.h"
#include "scheduler/sim/sim_config.h"

namespace psrt::sim {

struct GroupingChoice {
  Grouping grouping;
  double iteration_ms = 0;   // simulated, with the grouping (0 for a static one: not simulated)
  double ungrouped_ms = 0;   // simulated, every tensor alone (auto only)
  std::string start;         // auto: the candidate the local search started from
  uint32_t evaluations = 0;  // simulations run
  double search_ms = 0;      // wall time of the choice
};

// MG-WFBP (Shi, Chu, Li, INFOCOM 2019, theorem 1): walking tensors in backward order, merge the
// next gradient into the current group when the time from the group's communication start to the
// next gradient's readiness is below the start-up cost a of a message. Communication is
// t(m) = a + m * max(1, W / S) / bandwidth (the busiest link), a = latency + the calibrated
// per-message costs of a worker and W / S of a server's.
Grouping mgwfbp_grouping(const ModelDesc& model, const SimConfig& config);

// Any spec: static ones (scheduler/grouping.h), mgwfbp, or the search for auto. `config` is the
// cluster, links, mode and calibration the search simulates (its grouping is ignored).
GroupingChoice choose_grouping(const ModelDesc& model, const SimConfig& config,
                               const GroupingSpec& spec, uint32_t max_evaluations = 60);

}  // namespace psrt::sim
