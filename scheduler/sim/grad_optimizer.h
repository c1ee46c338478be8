// GradOptimizer: chooses the gradient grouping (scheduler/grouping.h) that minimises the
// simulated iteration time, and MG-WFBP's merge rule, the baseline that needs a cost model.
//
// The search. The simulator's iteration time is not a sum over groups (a group's cost depends on
// what the link, the servers' I/O threads and the credit are doing when it is ready), so dynamic
// programming over contiguous groupings with the simulator as cost would need the simulator for
// every (start, end) pair at every prefix: O(n^2) simulations of the whole iteration, far too
// slow for 300 tensors. Instead, each grouping priced with jittered_ms (the mean of the
// simulations at the link's bandwidth and 5% either side, below):
//   1. candidates: no grouping, MG-WFBP's merge rule, size:B for B in a ladder of factors of
//      2 from 4 KiB to twice the model's size and DDP's shape at each B (ddp:B:B/25, a first
//      bucket 1/25 of the others, as 1 MiB to 25 MiB), PyTorch DDP's buckets (25 MiB, first
//      1 MiB) and Horovod fusion (64 MiB / 5 ms, 128 MiB / 1 ms), those three scaled like the
//      model (baseline_specs); all priced, whatever the budget, the cheapest kept (the model's
//      own size sets the ladder's scale, not a full-size network's); a size or DDP winner is
//      refined at its cap times and divided by sqrt(2), then 2^(1/4);
//   2. local search from it: for each group boundary, in key order, try removing it (merging the
//      two neighbours) and moving it one tensor either way; keep a change when the price is
//      lower; repeat passes until one changes nothing or the evaluation budget is spent.
// The result is never dearer than any candidate, so than any baseline it includes.
// Deterministic: the budget counts simulations, not time, so every process of a job computes
// the same groups.
//
// Many workers. A simulation costs time in proportion to the workers simulated, and every worker
// runs the search on its I/O thread at job start: with hundreds of workers the full simulation
// would hold the I/O thread for longer than peer_timeout_s. Data-parallel workers are identical,
// so the search simulates at most kSearchWorkers of them, each standing for W / kSearchWorkers:
// the servers' links, per-message work and aggregation carry the whole cluster's load
// (SimConfig::worker_weight), the workers' own links and I/O threads carry one worker's. Up to
// kSearchWorkers workers nothing changes. Above, the reduced cluster is pessimistic (a simulated
// worker's messages are as long at a server as its W / kSearchWorkers workers' together; with 16
// simulated workers for 64, iterations 0-9% slower than the full simulation with 8 servers, up
// to 17% with 16), so its ranking is a guide, not a guarantee: the search's choice, its starting
// candidate and no grouping are then priced on the whole cluster and the cheapest kept, as long
// as those nine simulations stay within kVerifyEvents events (about 1.5 s; estimated from the
// reduced ones, so deterministic too); past that the reduced cluster's choice stands
// (GroupingChoice::verified false). Measured against the search on the whole cluster (ResNet-50,
// DenseNet-121, Inception-v3, Transformer profiles; 32 and 64 workers; 2 and 8 servers;
// preemptive and fifo), when the price was a single simulation: choices from 2.4% faster to
// 13.6% slower in the full simulation (median 0.0%), none slower than no grouping.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/grouping_spec.h"
#include "core/model.h"
#include "scheduler/grouping.h"
#include "scheduler/sim/sim_config.h"

namespace psrt::sim {

// The most workers the search simulates one by one, and the most events it spends checking its
// choice on the whole cluster.
constexpr uint32_t kSearchWorkers = 16;
constexpr uint64_t kVerifyEvents = 6'000'000;

// The bandwidth factors a grouping is priced at (jittered_ms). The simulated iteration is not
// smooth in the grouping: on the bench's Inception-v3, DDP's shape with a 932053-byte cap
// simulates at 135.0 ms, with 881743 and 980000 bytes at 148.2 and 139.4. A search over the
// single prediction picks such spikes, whose luck is the simulator's exact timing, not the
// runtime's: on ResNet-50 it chose DDP's shape at 370727 bytes, 135.4 ms simulated but 148.1 at
// 5% less bandwidth, and it ran at 146.9 ms where DDP's 25 MiB buckets (scaled) ran at 138.9.
// Priced at the link's bandwidth and 5% either side, a grouping's time is what it is across
// the jitter a real cluster has.
inline constexpr std::array<double, 3> kJitter{0.95, 1.0, 1.05};

// The mean of the simulated iteration over kJitter; `most_events`, when given, is raised to the
// most events one of those simulations took; `nominal_ms` >= 0: the simulation at factor 1,
// already run.
double jittered_ms(const ModelDesc& model, const SimConfig& config,
                   uint64_t* most_events = nullptr, double nominal_ms = -1);


struct NamedGrouping {
  std::string name;  // the candidate's spec text ("ddp:370727:14829", "mgwfbp", "none")
  Grouping grouping;
  double price_ms = 0;  // jittered_ms, on the searched cluster
};

struct GroupingChoice {
  Grouping grouping;
  double iteration_ms = 0;   // simulated (jittered_ms), with the grouping (0 for a static one;
                             // above kSearchWorkers workers, on the reduced cluster)
  double ungrouped_ms = 0;   // simulated (jittered_ms), every tensor alone (auto only)
  std::string start;         // auto: the candidate the local search started from
  uint32_t evaluations = 0;  // simulations run
  double search_ms = 0;      // wall time of the choice
  uint32_t simulated_workers = 0;  // auto: the workers the search simulated (weighted above)
  bool verified = false;     // auto on a reduced cluster: the choice checked on the whole one
  // auto: runners-up for online trials (worker/grouping_trials.h), cheapest first: the cheapest
  // priced candidate of each family (none, mgwfbp, size, ddp, horovod; a refined cap counts in
  // its family) whose grouping differs from the choice and from each other.
  std::vector<NamedGrouping> alternatives;
};

// The baselines the search starts from, as their sources set them for full-size models: PyTorch
// DDP's buckets (25 MiB, first 1 MiB) and Horovod fusion (64 MiB / 5 ms, 128 MiB / 1 ms). A
// profile shrunk by `scale` (ModelDesc::scale: its sizes and times) gets their bytes and cycle
// times shrunk alike, so the search prices the groupings they would make at full size, in
// proportion. The bench scales its baselines' bytes the same way (its Horovod cycle times also
// by the time factor of its derived profiles, which a ModelDesc does not record).
std::vector<GroupingSpec> baseline_specs(double scale);

// MG-WFBP (Shi, Chu, Li, INFOCOM 2019, theorem 1): walking tensors in backward order, merge the
// next gradient into the current group when the time from the group's communication start to the
// next gradient's readiness is below the start-up cost a of a message. Communication is
// t(m) = a + m * max(1, W / S) / bandwidth (the busiest link), a = latency + the calibrated
// per-message costs of a worker and W / S of a server's.
Grouping mgwfbp_grouping(const ModelDesc& model, const SimConfig& config);

// How an auto choice was made, for logs: "60 simulations in 210 ms, from size:524288" and, on a
// reduced cluster, "; 16 simulated workers for 512, checked on all 512" (or "not checked: ...").
std::string describe_search(const GroupingChoice& choice, uint32_t workers);

// Any spec: static ones (scheduler/grouping.h), mgwfbp, or the search for auto. `config` is the
// cluster, links, mode and calibration the search simulates (its grouping is ignored); above
// `simulated_workers` workers the search simulates that many, weighted (above).
// `max_evaluations` bounds the simulations of the search, except that every candidate is priced
// whatever it is (three simulations each, a few dozen candidates).
// `threads`: how many run the search's simulations side by side (0: the machine's cores, at most
// 8; scheduler/sim/parallel_prices.h): the choice is the same whatever their number.
GroupingChoice choose_grouping(const ModelDesc& model, const SimConfig& config,
                               const GroupingSpec& spec, uint32_t max_evaluations = 100,
                               uint32_t simulated_workers = kSearchWorkers, uint32_t threads = 0);

}  // namespace psrt::sim
