// The search's prices (jittered_ms) of several groupings at once, their simulations spread over
// threads. Each simulation is independent and deterministic, and each price sums its kJitter
// simulations in the same order as jittered_ms, so a price does not depend on the threads: the
// search chooses the same groups on a laptop and on a 64-core node, only sooner.
#pragma once

#include <cstdint>
#include <vector>

#include "core/model.h"
#include "scheduler/grouping.h"
#include "scheduler/sim/sim_config.h"

namespace psrt::sim {

// The threads a search uses when asked for 0: the machine's cores, at most 8 (a worker's search
// runs once, at job start, beside nothing else of its own).
uint32_t search_threads(uint32_t wanted);

struct JitteredPrice {
  double ms = 0;        // jittered_ms
  uint64_t events = 0;  // the most events one of its simulations took
};

// jittered_ms of `config` with each grouping, in order. A simulation that throws (a config it
// refuses, memory) throws here, on the caller's thread, whichever thread ran it.
std::vector<JitteredPrice> jittered_prices(const ModelDesc& model, const SimConfig& config,
                                           const std::vector<Grouping>& groupings,
                                           uint32_t threads);

}  // namespace psrt::sim
