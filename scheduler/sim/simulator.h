// psrt-sim's core: a discrete-event simulation of synchronous data-parallel training on a
// parameter server, one profile, W identical workers and S servers, to predict the steady-state
// iteration time of each push mode. GradOptimizer and NetPlacer build on it.
//
// What is simulated (the runtime's semantics, see DESIGN.md):
//  - Worker compute is one stream. Forward of layer l in iteration i > 0 starts when forward
//    l-1 has ended and every chunk of l's tensors has come back from iteration i-1 (bigdl: every
//    chunk of every tensor, before forward 0). Backward runs L-1..0 back to back. When backward l
//    ends, each of l's tensors is added to the worker's PushQueue (priority = key; bigdl expects
//    all tensors before any leaves). Iteration 0 starts with all parameters present.
//  - Chunks: shard_map_for() (chunk_bytes in the chunked modes, whole tensors otherwise, still
//    split as far as server balance needs). The worker hands the queue's next chunk to its uplink
//    whenever credit allows (PushQueue::next), the same policy object the real worker uses.
//  - Network: see network.h (cut-through, per-host full-duplex links, FIFO uplinks).
//  - Server: acknowledges each chunk on arrival (credit returns after ack_latency_ms); when the
//    chunk of all W workers is in, aggregates it (one chunk at a time per server, W * b / rate),
//    then adds the reply chunk to each worker's reply PushQueue (preemptive, credit_bytes,
//    priority = key); replies are acknowledged on arrival at the worker.
//  - Groups (config.grouping, scheduler/grouping.h): a group's messages (MessagePlan) join the
//    queue once backward has produced all of its tensors, as one PushQueue entry whose units are
//    messages; the server aggregates a message when all W copies are in and replies with it.
//    With release_cycle_ms (Horovod's cycle), a complete group joins at the timer's next tick.
//  - The runtime's own costs (config.calibration, calibration.h): each worker's and each server's
//    I/O thread is a serial resource; a worker pays worker_message_us before a push goes to its
//    uplink and worker_message_us + bytes * worker_byte_ns when a reply lands; a server pays
//    server_message_us + bytes * server_byte_ns when a push lands (its ACK and counting follow)
//    and server_message_us before each reply goes to its uplink. Zero: the ideal runtime.
//  - Decisions at an instant (what to send) see every state change of that instant.
// Deterministic: the same inputs give the same result, bit for bit.
//
// Prediction: the duration of the last simulated iteration on worker 0, from the start of its
// forward of layer 0 to the next one's, so pipelining across iteration boundaries counts. Where
// the schedule repeats over more than one iteration (whole-tensor modes with messages over the
// credit alternate 156 and 383 ms on the bench's VGG-16), steady_ms(), the mean of the
// iterations after the first, is what a run's steady state measures.
#pragma once

#include <cstdint>
#include <vector>

#include "core/model.h"
#include "scheduler/sim/bounds.h"
#include "scheduler/sim/sim_config.h"

namespace psrt::sim {

struct SimResult {
  double iteration_ms = 0;                 // the prediction: the last iteration on worker 0
  std::vector<double> iteration_start_ms;  // worker 0's forward-0 starts, one per iteration
  double end_ms = 0;                       // when the last reply of the last iteration landed
  LowerBounds bounds;                      // for the same model, shard map and config
  uint32_t chunks = 0;                     // in the shard map used
  uint32_t messages = 0;                   // push messages per worker and iteration (groups)
  uint64_t max_link_bytes = 0;             // busiest link direction over the whole run
  uint64_t events = 0;                     // actions run
  double io_work_ms = 0;  // the I/O threads' calibrated work over the run, all processes
  // Per layer, how long worker 0's forward waited for the layer's parameters in the iteration
  // iteration_ms measures (layer 0: the wait that ends it), so iteration_ms is the model's
  // compute plus their sum. The runtime's timeline shows them as "wait LAYER".
  std::vector<double> forward_wait_ms;

  // The mean of worker 0's iterations after the first (iteration_ms with fewer than three).
  double steady_ms() const {
    const std::size_t n = iteration_start_ms.size();
    if (n < 3) return iteration_ms;
    return (iteration_start_ms[n - 1] - iteration_start_ms[1]) / double(n - 2);
  }
  double ratio_to_bound() const { return steady_ms() / bounds.max_ms(); }
};

// Throws std::invalid_argument for a bad config or a model without tensors, std::logic_error if
// the simulation stops before every worker has finished (a bug, not an input error).
SimResult simulate(const ModelDesc& model, const SimConfig& config);

}  // namespace psrt::sim
