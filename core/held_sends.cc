#include "core/held_sends.h"

namespace psrt {

bool HeldSends::hold(const std::string& peer, const wire::Header& h,
                     std::vector<zmq::message_t>& payload) {
  std::size_t bytes = h.ByteSizeLong() + kOverhead;
  for (const auto& frame : payload) bytes += frame.size();
  auto it = queues_.find(peer);
  // A message larger than the cap is still held when nothing else is.
  if (it != queues_.end() && it->second.bytes + bytes > max_bytes_) return false;
  Queue& q = it != queues_.end() ? it->second : queues_[peer];
  q.messages.push_back(Message{h, std::move(payload), bytes});
  q.bytes += bytes;
  return true;
}

std::size_t HeldSends::flush(const Send& send) {
  std::size_t sent = 0;
  for (auto it = queues_.begin(); it != queues_.end();) {
    Queue& q = it->second;
    while (!q.messages.empty()) {
      Message& m = q.messages.front();
      bool full = false;
      if (!send(it->first, m.header, m.payload, &full)) {
        if (full) break;
        gone_ += q.messages.size();  // nobody to send them to
        q.messages.clear();
        break;
      }
      q.bytes -= m.bytes;
      q.messages.pop_front();
      ++sent;
    }
    it = q.messages.empty() ? queues_.erase(it) : std::next(it);
  }
  return sent;
}

std::size_t HeldSends::messages() const {
  std::size_t n = 0;
  for (const auto& [peer, q] : queues_) n += q.messages.size();
  return n;
}

}  // namespace psrt
