// The baseline placers, each after its source (see placer_source()). Each returns the layer-to-
// device map; memory is checked afterwards for all placers alike (placer.cc), so a baseline that
// ignores memory yields an "infeasible" answer rather than an over-full plan.
#pragma once

#include <cstdint>
#include <vector>

#include "core/sharding.h"
#include "core/status.h"
#include "placement/placer.h"

namespace psrt::placement {

using Assignment = Result<std::vector<uint32_t>>;

Assignment single_device(const Problem& p);   // the fastest device the whole model fits on
Assignment even_layers(const Problem& p);     // K runs of equal layer counts
Assignment torchgpipe_time(const Problem& p); // torchgpipe balance_by_time: min-max block sums
Assignment pipedream(const Problem& p);       // PipeDream's DP: max(compute, communication)
Assignment baechi_metf(const Problem& p);     // Baechi m-ETF
Assignment baechi_msct(const Problem& p);     // Baechi m-SCT
Assignment balance_only(const Problem& p);    // METIS-like: balanced compute, min edge cut
Assignment annealing(const Problem& p);       // simulated annealing scored by the simulator
Assignment exhaustive(const Problem& p);      // every pipeline split, scored by the simulator

// The simulator's step time for an assignment (infinity when a device is over its memory).
// `shards`: the runtime's shard map for p (sim::shard_map_for), when the caller prices many
// plans; null: built for this call.
double simulated_step_ms(const Problem& p, const std::vector<uint32_t>& device_of_layer,
                         const ShardMap* shards = nullptr);

}  // namespace psrt::placement
