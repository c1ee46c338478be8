// Messages that met a full queue (the high-water mark, limits.socket_hwm) on one socket, held for
// each peer in the order they were sent and sent as room comes. ZeroMQ drops what meets the mark,
// and nothing in psrt sends a message twice: a server's reply lost there stalled a job within
// every limit (many small tensors or compressed pushes put more messages in flight than the mark)
// until cluster.progress_timeout_s, which then blamed a healthy worker. A peer that reads nothing
// gets at most `max_bytes` held; what comes past that is dropped, as before (a worker flooding a
// server without reading its replies must not take the server's memory). The byte credit bounds
// what a job has in flight on a link, so the bound follows it (SocketOptions::held_bytes).
#pragma once

#include <zmq.hpp>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/wire.h"

namespace psrt {

class HeldSends {
 public:
  // What a message held costs beside its payload and header (its copy of the header, the queue).
  static constexpr std::size_t kOverhead = 512;

  // At most `max_bytes` held per peer: the payload and header bytes, and kOverhead a message.
  explicit HeldSends(std::size_t max_bytes) : max_bytes_(max_bytes) {}

  // Sends one message; false when it was not sent, then `*full` says whether for a full queue
  // (else the peer is gone). `payload` is taken only when it was sent.
  using Send = std::function<bool(const std::string& peer, const wire::Header& h,
                                  std::vector<zmq::message_t>& payload, bool* full)>;

  // Whether messages wait for `peer`: one sent now must wait behind them.
  bool holds(const std::string& peer) const {
    return !queues_.empty() && queues_.count(peer) > 0;
  }
  // Holds a message for `peer` (its payload is taken); false when the peer has max_bytes held
  // already, and the message is dropped.
  bool hold(const std::string& peer, const wire::Header& h, std::vector<zmq::message_t>& payload);
  // Sends what waits, each peer's in order, until its queue is full again; a peer that is gone
  // loses what waits for it. Returns the number of messages sent.
  std::size_t flush(const Send& send);

  bool empty() const { return queues_.empty(); }
  std::size_t messages() const;
  uint64_t lost_to_gone_peers() const { return gone_; }

 private:
  struct Message {
    wire::Header header;
    std::vector<zmq::message_t> payload;
    std::size_t bytes = 0;
  };
  struct Queue {
    std::deque<Message> messages;
    std::size_t bytes = 0;
  };
  std::size_t max_bytes_;
  std::map<std::string, Queue> queues_;  // only peers with something held
  uint64_t gone_ = 0;
};

}  // namespace psrt
