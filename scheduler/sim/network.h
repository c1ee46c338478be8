// Hosts on a non-blocking switch, each with its own full-duplex link of the same bandwidth.
//
// Cut-through model with a buffering switch: each link direction is a FIFO resource of rate
// `bytes_per_s`. The sender's uplink sends its messages one at a time, in the order handed over;
// a message of b bytes holds it for b / rate. Its bytes reach the switch as they leave, and the
// receiver's downlink forwards whole messages in the order their first byte came in: from
// max(uplink start, downlink free) for b / rate. The message arrives `latency_ms` after its last
// byte left the downlink, i.e. at the later of the two links' finish (the "max of both"), so one
// message alone on its path costs b / rate (not 2 b / rate as store-and-forward), no link direction
// carries more than its rate, and a busy receiver never blocks the sender's uplink (the switch
// holds the bytes). A host may have a slower link than the others (set_bandwidth: a simulated
// worker standing for several, SimConfig::worker_weight); a message then also arrives no earlier
// than its last byte left the sender.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "scheduler/sim/event_queue.h"

namespace psrt::sim {

class Network {
 public:
  Network(EventQueue& events, uint32_t hosts, double bytes_per_s, double latency_ms);

  // Hands a message to `from`'s uplink now; `on_arrival` runs when it has arrived at `to`.
  void send(uint32_t from, uint32_t to, uint64_t bytes, Action on_arrival);

  // A slower link for `host` (both directions) than the others' (SimConfig::worker_weight).
  void set_bandwidth(uint32_t host, double bytes_per_s);

  double transfer_ms(uint64_t bytes) const;  // at the common bandwidth
  uint64_t bytes_sent(uint32_t host) const { return hosts_[host].up_bytes; }
  uint64_t bytes_received(uint32_t host) const { return hosts_[host].down_bytes; }

 private:
  struct Message {
    uint32_t to;
    uint64_t bytes;
    Action on_arrival;
  };
  struct Host {
    std::deque<Message> queue;  // handed over, not yet on the wire
    bool sending = false;
    double down_free = 0;  // when the downlink has forwarded all it was given
    double bytes_per_s = 0;  // this host's link rate
    uint64_t up_bytes = 0;
    uint64_t down_bytes = 0;
  };
  void start_next(uint32_t from);
  static double transfer_ms(uint64_t bytes, double bytes_per_s);

  EventQueue& events_;
  std::vector<Host> hosts_;
  double bytes_per_s_;
  double latency_ms_;
};

}  // namespace psrt::sim
