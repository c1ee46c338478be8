// What the iteration simulator is asked to simulate: the cluster, the network and the push policy.
#pragma once

#include <cstdint>

#include "core/model.h"
#include "core/sharding.h"
#include "scheduler/grouping.h"
#include "scheduler/mode.h"
#include "scheduler/sim/calibration.h"

namespace psrt::sim {

struct SimConfig {
  uint32_t workers = 1;
  uint32_t servers = 1;
  double bandwidth_bytes_per_s = 125e6;  // every host's link, each direction (1 Gbit/s)
  Mode mode = Mode::kPreemptive;
  uint64_t chunk_bytes = 4u << 20;   // chunked modes' unit of transfer
  uint64_t credit_bytes = 8u << 20;  // per sender (a worker; a server per worker for replies)
  double latency_ms = 0;             // added to every message's arrival
  double ack_latency_ms = 0;         // from a message's arrival to the sender's credit coming back
  // Aggregation throughput in gradient bytes read per second: a chunk of b bytes from W workers
  // takes W * b / rate, one chunk at a time per server. 0 means instant.
  double aggregation_bytes_per_s = 0;
  uint32_t iterations = 5;  // simulated; the last one's duration is the prediction (>= 2)
  Calibration calibration;  // per-message and per-byte costs of the runtime (ideal: none)
  Grouping grouping;        // GradOptimizer's groups; empty: every tensor alone
  // Horovod's cycle timer (grouping horovod:BYTES:MS): a group whose tensors are all produced
  // leaves at the next multiple of this many ms (a free-running timer from time 0); 0: at once.
  double release_cycle_ms = 0;
  // Each simulated worker stands for this many identical ones (>= 1): a server's link runs at
  // bandwidth / worker_weight, and its per-message and per-byte work and its aggregation cost
  // worker_weight times as much, so the servers carry the load of workers x worker_weight
  // workers. GradOptimizer's search uses it to simulate a few workers for many
  // (grad_optimizer.h); 1 simulates every worker.
  double worker_weight = 1;
  // Adaptive batching (scheduler.batch_bytes): single-chunk messages of at most half this size
  // that a worker's queue, or a server's reply queue, releases together for one peer travel as one
  // message of at most this many bytes (one per-message cost, one acknowledgement); 0: off.
  uint64_t batch_bytes = 64u << 10;
  // 0: every process has cores of its own (a cluster). N: all the simulated processes share one
  // machine of N cores (the benches' emulated cluster): a job on an I/O thread also waits for a
  // free core.
  uint32_t host_cores = 0;
};

// Throws std::invalid_argument naming the field that is out of range.
void validate(const SimConfig& config);

// The cluster with at most `most` (>= 1) simulated workers, each standing for workers / most of
// them (worker_weight, times any weight already given): the servers carry the whole cluster's
// load, a worker's own link and I/O thread one worker's. Unchanged with at most `most` workers.
// Data-parallel workers are identical, so this prices a large cluster at a small one's cost;
// it is pessimistic (grad_optimizer.h gives the measured error).
SimConfig reduced_cluster(const SimConfig& config, uint32_t most);

// The most chunks the simulator takes (about a 16 TiB model at 4 MiB chunks).
constexpr uint64_t kMaxSimChunks = 4u << 20;

// The shard map the runtime uses in this mode: chunks of chunk_bytes in the chunked modes; in
// the whole-tensor modes no size limit, so tensors are split only as far as balance needs.
// std::invalid_argument past kMaxSimChunks.
ShardMap shard_map_for(const ModelDesc& model, const SimConfig& config);
ShardMap shard_map_for(const ModelDesc& model, uint32_t servers, Mode mode, uint64_t chunk_bytes);
// How many chunks shard_map_for would make (before balancing may halve some), without making
// them; in doubles, since a profile's tensor bytes may overflow 64 bits.
double sim_chunk_count(const ModelDesc& model, Mode mode, uint64_t chunk_bytes);

// W * worker_weight * bytes / aggregation rate, in ms (0 when the rate is 0).
double aggregation_ms(const SimConfig& config, uint64_t chunk_bytes);

}  // namespace psrt::sim
