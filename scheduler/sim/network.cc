#include "scheduler/sim/network.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace psrt::sim {

Network::Network(EventQueue& events, uint32_t hosts, double bytes_per_s, double latency_ms)
    : events_(events), hosts_(hosts), bytes_per_s_(bytes_per_s), latency_ms_(latency_ms) {
  if (!(bytes_per_s > 0)) throw std::invalid_argument("Network: bandwidth must be positive");
  if (latency_ms < 0) throw std::invalid_argument("Network: latency must not be negative");
  for (auto& h : hosts_) h.bytes_per_s = bytes_per_s;
}

void Network::set_bandwidth(uint32_t host, double bytes_per_s) {
  if (host >= hosts_.size() || !(bytes_per_s > 0)) {
    throw std::invalid_argument("Network: bad host or bandwidth");
  }
  hosts_[host].bytes_per_s = bytes_per_s;
}

// bytes * 1000 / rate rather than bytes / rate * 1000: exact whenever the quotient is.
double Network::transfer_ms(uint64_t bytes, double bytes_per_s) {
  return static_cast<double>(bytes) * 1000.0 / bytes_per_s;
}

double Network::transfer_ms(uint64_t bytes) const { return transfer_ms(bytes, bytes_per_s_); }

void Network::send(uint32_t from, uint32_t to, uint64_t bytes, Action on_arrival) {
  if (from >= hosts_.size() || to >= hosts_.size() || from == to) {
    throw std::invalid_argument("Network: bad hosts for a message");
  }
  hosts_[from].queue.push_back(Message{to, bytes, std::move(on_arrival)});
  if (!hosts_[from].sending) start_next(from);
}

void Network::start_next(uint32_t from) {
  Host& h = hosts_[from];
  if (h.queue.empty()) {
    h.sending = false;
    return;
  }
  Message m = std::move(h.queue.front());
  h.queue.pop_front();
  Host& dst = hosts_[m.to];
  const double now = events_.now();
  const double up_end = now + transfer_ms(m.bytes, h.bytes_per_s);
  // Never before its last byte left the uplink (a slower sender: SimConfig::worker_weight).
  const double down_end = std::max(
      up_end, std::max(now, dst.down_free) + transfer_ms(m.bytes, dst.bytes_per_s));
  dst.down_free = down_end;
  h.sending = true;
  h.up_bytes += m.bytes;
  dst.down_bytes += m.bytes;
  // The uplink frees first, then the message lands: both at the same time when the downlink was
  // free and there is no latency.
  events_.at(up_end, [this, from] { start_next(from); });
  events_.at(down_end + latency_ms_, std::move(m.on_arrival));
}

}  // namespace psrt::sim
