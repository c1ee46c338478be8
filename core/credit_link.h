// One direction of a link under byte credit (DESIGN.md, "Flow control"): the sequence numbers
// of what was sent, what is unacknowledged and how many bytes that is. The worker's pushes, the
// server's replies to each worker and the activations between stages all keep their books here.
// A scheduled link (a PushQueue decides what goes next) asks the queue for the window; a link
// that sends in arrival order asks allows(). Both apply the one credit rule below.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>

namespace psrt {

// The credit rule: `bytes` more may go when they fit beside what is in flight, or when nothing is
// in flight (a message larger than the credit goes alone, so nothing waits forever).
constexpr bool credit_allows(uint64_t in_flight, uint64_t bytes, uint64_t credit) {
  return in_flight == 0 || in_flight + bytes <= credit;
}

class CreditLink {
 public:
  using Clock = std::chrono::steady_clock;
  struct Sent {
    uint64_t bytes = 0;  // counted against the credit; 0 for messages that are only tracked
    uint32_t tag = 0;    // the sender's own: a chunk or message index
    Clock::time_point enqueued{}, sent{};
    uint64_t iteration = 0;
  };

  // `credit_bytes`: the window allows() applies; 0 when a PushQueue keeps the window.
  CreditLink() = default;
  explicit CreditLink(uint64_t credit_bytes) : credit_(credit_bytes) {}

  bool allows(uint64_t bytes) const { return credit_allows(in_flight_, bytes, credit_); }
  // The sequence number of the next message on this link (every message gets one, tracked or not).
  uint64_t next_seq() { return ++seq_; }
  // A message with sequence number `seq` went out and waits for its acknowledgement.
  void sent(uint64_t seq, const Sent& s) {
    unacked_[seq] = s;
    in_flight_ += s.bytes;
  }
  // next_seq() and sent() in one.
  uint64_t send(const Sent& s) {
    const uint64_t seq = next_seq();
    sent(seq, s);
    return seq;
  }
  // The acknowledgement of `seq`: what was sent, now released; nullopt when `seq` is not in
  // flight (a duplicate, or a peer's mistake: the caller decides whether that is an error).
  std::optional<Sent> acked(uint64_t seq) {
    auto it = unacked_.find(seq);
    if (it == unacked_.end()) return std::nullopt;
    const Sent s = it->second;
    in_flight_ -= s.bytes;
    unacked_.erase(it);
    return s;
  }

  uint64_t in_flight() const { return in_flight_; }
  std::size_t unacked() const { return unacked_.size(); }
  uint64_t credit() const { return credit_; }

 private:
  uint64_t credit_ = 0;
  uint64_t seq_ = 0;
  uint64_t in_flight_ = 0;
  std::map<uint64_t, Sent> unacked_;
};

}  // namespace psrt
