// What `scheduler.mode` means, in one place (DESIGN.md, "Scheduling modes"): what a sender puts
// on the wire next, and what a layer's forward waits for. The worker's push queue, the servers'
// replies, the trainer, the coordinator's shard map and the simulator ask this class; nothing
// else looks at the mode.
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/mode.h"
#include "core/sharding.h"

namespace psrt {

class SchedulePolicy {
 public:
  explicit SchedulePolicy(Mode mode) : mode_(mode) {}

  // The servers' replies, in every mode: chunk by chunk, the highest-priority (input-side) chunk
  // first. The mode decides how gradients leave a worker; the next forward wants the input side's
  // parameters first whatever the mode (DESIGN.md: "the server's replies follow the same
  // priority"). A reply is one chunk added on its own, so a whole-tensor order would change
  // nothing, and under bigdl the forward waits for every reply anyway.
  static SchedulePolicy replies() { return SchedulePolicy(Mode::kPreemptive); }

  Mode mode() const { return mode_; }

  // ---- what is sent next ----
  // bigdl: nothing leaves before the iteration's whole backward has handed over every gradient.
  bool holds_until_backward_done() const { return mode_ == Mode::kBigdl; }
  // Order by priority (lower first); false (fifo, fifo_chunked): by the order gradients became
  // ready. Ties keep arrival order in both.
  bool by_priority() const { return mode_ != Mode::kFifo && mode_ != Mode::kFifoChunked; }
  // The unit of transfer is scheduler.chunk_bytes, and after each chunk the best ready chunk goes
  // next; false: a tensor's part on a server goes whole, and a started tensor is finished first.
  bool chunked() const { return mode_ == Mode::kFifoChunked || mode_ == Mode::kPreemptive; }
  // The largest chunk the shard map makes: chunk_bytes in the chunked modes, whole tensors
  // otherwise; never over kMaxChunkBytes.
  uint64_t unit_bytes(uint64_t chunk_bytes) const {
    return std::min(kMaxChunkBytes, chunked() ? chunk_bytes : kMaxChunkBytes);
  }

  // ---- what the compute waits for ----
  // bigdl: the forward starts when every parameter of the iteration is in; otherwise each layer
  // waits for its own parameters only.
  bool forward_waits_for_all() const { return mode_ == Mode::kBigdl; }

 private:
  Mode mode_;
};

}  // namespace psrt
