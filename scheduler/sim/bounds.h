// Lower bounds on the steady-state iteration time; the simulator's prediction is never below
// any of them.
//
//   compute_ms   the worker's forward and backward of all layers: one compute stream.
//   link_ms      the busiest link direction's bytes per iteration over the bandwidth. A worker
//                sends the whole model up and receives it down; server s receives W times its
//                bytes (server_bytes[s] in the shard map) and sends W times them.
//   critical_ms  the path through the first layer that has parameters, l* (layer 0 in every
//                profile): forward and backward of layers l*..L-1 (all layers when l* = 0; the
//                layers before l* may overlap the round trip), then the round trip of one chunk
//                of l*: up (b / bandwidth + latency), aggregation (W * b / rate) and down
//                (b / bandwidth + latency). b is the largest chunk of l*'s tensors, since every
//                one of them must make that trip before the next forward of l*.
//   max_ms       the largest of the three.
#pragma once

#include <cstdint>
#include <string>

#include "core/model.h"
#include "core/sharding.h"
#include "scheduler/sim/sim_config.h"

namespace psrt::sim {

struct LowerBounds {
  double compute_ms = 0;
  double link_ms = 0;
  double critical_ms = 0;
  std::string busiest_link;  // "worker up/down" or "server 1 up/down"

  double max_ms() const;
  const char* binding() const;  // "compute", "link" or "critical"
};

LowerBounds lower_bounds(const ModelDesc& model, const ShardMap& shards, const SimConfig& config);

}  // namespace psrt::sim
