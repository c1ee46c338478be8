// The placers: NetPlacer and the baselines, behind one call. A placer maps every layer of a model
// to a device; the plan it returns carries the per-device compute and memory, the cut bytes, the
// search time and the simulated step time (the simulator prices every plan after the search, so
// that all placers are compared on the same scale; NetPlacer's search never simulates).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/plan.h"
#include "core/status.h"
#include "scheduler/mode.h"
#include "scheduler/sim/calibration.h"

namespace psrt::placement {

struct PlacerOptions {
  Mode mode = Mode::kPreemptive;  // the push mode the plan is priced in
  uint64_t chunk_bytes = 4u << 20;
  uint32_t replicas = 1;  // data-parallel copies of the pipeline
  uint32_t servers = 1;
  uint64_t seed = 1;                   // simulated annealing
  uint32_t anneal_steps = 2000;        // simulated annealing's simulator calls
  uint32_t exhaustive_max_layers = 12; // larger graphs: the exhaustive placer declines
  bool price = true;                   // run the simulator on the result (step_ms)
  // What the simulator adds for the runtime's own I/O work (scheduler/sim/pipeline.h); the
  // placers' closed-form estimates leave it out.
  sim::Calibration calibration;
  uint32_t host_cores = 0;
  // The placers that search by simulation (annealing, exhaustive) give up with an error past
  // this many seconds of searching (0: no limit). psrt-placer sets it, so that one request
  // cannot hold the service for long: their cost grows with layers x micro-batches x devices.
  double max_search_s = 0;
  // Told after each plan the searching placers simulate: how many so far and of how many (0: not
  // known ahead, the exhaustive enumeration), so that a tool can show progress on a long search.
  std::function<void(uint64_t simulated, uint64_t total)> progress;
};

struct Problem {
  const ModelDesc& model;
  const DeviceSet& devices;
  TrainingSetup setup;
  PlacerOptions options;
};

// The placers by name, NetPlacer first.
const std::vector<std::string>& placer_names();
// Where each baseline comes from (one line), for tables and docs.
std::string placer_source(const std::string& name);

// Runs the named placer. An error when the name is unknown, the model does not fit the devices
// (naming the device and the missing bytes), or the placer does not apply (the exhaustive search
// on a graph of more than exhaustive_max_layers layers).
Result<Plan> place(const std::string& name, const Problem& problem);

}  // namespace psrt::placement
