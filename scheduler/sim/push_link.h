// One device's gradient push to the parameter servers and the parameters' return, as the push
// modes order it (DESIGN.md "Scheduling modes"), for the pipeline simulator: the device's uplink
// sends, the servers aggregate at once and reply, the device's downlink brings the new values back.
#pragma once

#include <cstdint>
#include <vector>

#include "scheduler/mode.h"

namespace psrt::sim {

struct PushItem {
  double ready_ms = 0;  // when backward produced the gradient
  uint32_t priority = 0;  // lower goes first (the tensor key)
  uint64_t bytes = 0;
};

struct PushLink {
  double bytes_per_s = 1.25e9;
  double latency_ms = 0;
  uint64_t chunk_bytes = 4u << 20;  // the chunked modes' unit
};

// When each item's new parameters are back on the device (same order as `items`).
std::vector<double> push_and_return(const std::vector<PushItem>& items, Mode mode,
                                    const PushLink& link);

}  // namespace psrt::sim
