// The push scheduler's queue: which chunk goes to the transport next, as the mode's
// SchedulePolicy orders it, within byte credit. Not thread-safe and free of I/O, so that the
// worker's I/O thread, the server's reply path and the simulator all use the same rules and tests
// drive it with a fake transport.
//
// Order is (priority, sequence) with a strict comparator; sequence is the order in which tensors
// were added, so equal priorities keep arrival order.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "scheduler/schedule_policy.h"

namespace psrt {

struct PushUnit {
  uint32_t chunk = 0;     // the chunk's id in the shard map
  uint32_t key = 0;       // its tensor
  uint32_t priority = 0;  // lower goes first
  uint64_t bytes = 0;     // bytes it puts on the wire (after compression)
  uint64_t seq = 0;       // set by the queue: arrival order of its tensor
};

class PushQueue {
 public:
  PushQueue(SchedulePolicy policy, uint64_t credit_bytes);
  PushQueue(Mode mode, uint64_t credit_bytes) : PushQueue(SchedulePolicy(mode), credit_bytes) {}

  // A tensor's gradient is ready: its chunks, in offset order.
  void add(uint32_t key, uint32_t priority, std::vector<PushUnit> chunks);
  // bigdl only: how many tensors make one iteration. Nothing leaves until all have been added;
  // then they leave in priority order.
  void expect_tensors(uint32_t n) { expected_ = n; }

  // The next chunk to hand to the transport now, counted in flight; nullopt when nothing is
  // ready or the credit is used up. A chunk larger than the credit goes when nothing is in flight.
  std::optional<PushUnit> next();
  // The receiver acknowledged `bytes` of what was in flight.
  void acked(uint64_t bytes);

  Mode mode() const { return policy_.mode(); }
  uint64_t credit() const { return credit_; }
  uint64_t in_flight() const { return in_flight_; }
  std::size_t pending_chunks() const { return pending_; }
  bool idle() const { return pending_ == 0 && in_flight_ == 0; }

 private:
  using Order = std::pair<uint64_t, uint64_t>;  // (priority or 0, sequence)
  struct Tensor {
    uint32_t key;
    std::vector<PushUnit> chunks;  // taken from the front: chunks[next] goes next
    std::size_t next = 0;
  };
  Order order_of(uint32_t priority, uint64_t seq) const;
  void release(Order order, Tensor tensor);

  SchedulePolicy policy_;
  uint64_t credit_;
  uint64_t in_flight_ = 0;
  uint64_t seq_ = 0;
  std::size_t pending_ = 0;
  uint32_t expected_ = 0;
  std::map<Order, Tensor> ready_;
  std::optional<Order> current_;  // whole-tensor modes: the tensor being sent
  std::vector<std::pair<Order, Tensor>> held_;  // bigdl: waiting for the iteration's last tensor
};

}  // namespace psrt
