// Gradients lent to the transport instead of copied (codec none): a lent buffer stays where
// backward wrote it until the last ZeroMQ frame reading it is released, and the compute thread
// reclaims it before the next backward writes there. Synchronous training never waits in
// reclaim: a layer's next backward follows its forward, which waited for parameters the servers
// made from this very push, so it was on the wire long before. The wait makes that an invariant
// checked at run time, not an assumption: a gradient is never changed while it is being sent.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

namespace psrt {

class LentBuffers {
 public:
  explicit LentBuffers(std::size_t keys);

  // An owner for frames of `data`, tensor `key`'s buffer: the key is lent while the owner or a
  // copy of it lives. The owners keep this book's state alive, whatever outlives whom.
  std::shared_ptr<const void> lend(uint32_t key, const void* data);
  // Blocks until none of `keys` is lent; false when abandon() ended the wait with one still lent.
  bool reclaim(std::span<const uint32_t> keys);
  // The client failed: frames may never be written, so reclaim() stops waiting.
  void abandon();
  // Keys lent now (tests, diagnostics).
  std::size_t lent() const;

 private:
  struct State {
    mutable std::mutex mu;
    std::condition_variable cv;
    std::vector<uint32_t> out;  // by key: owners alive
    bool abandoned = false;
  };
  std::shared_ptr<State> state_;
};

}  // namespace psrt
