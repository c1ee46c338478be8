// One direction of a link under byte credit (DESIGN.md, "Flow control"): the sequence numbers
// of what was sent, what is unacknowledged and how many bytes that is. The worker's pushes, the
// server's replies to each worker and the activations between stages all keep their books here.
// A scheduled link (a PushQueue decides what goes next) asks the queue for the window; a link
// that sends in arrival order asks allows(). Both apply the one credit rule below.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
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
    Slot& slot = slot_for(seq);
    if (slot.live) {
      in_flight_ -= slot.sent.bytes;  // the same seq again: the last one counts
    } else {
      ++unacked_;
    }
    slot = {true, s};
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
    if (seq < base_ || seq - base_ >= slots_.size() || !slots_[seq - base_].live) {
      return std::nullopt;
    }
    Slot& slot = slots_[seq - base_];
    slot.live = false;
    const Sent s = slot.sent;
    --unacked_;
    in_flight_ -= s.bytes;
    while (!slots_.empty() && !slots_.front().live) {  // the window starts at the oldest in flight
      slots_.pop_front();
      ++base_;
    }
    return s;
  }

  // What `seq` carried while it is in flight, without releasing it; null otherwise.
  const Sent* find(uint64_t seq) const {
    if (seq < base_ || seq - base_ >= slots_.size() || !slots_[seq - base_].live) return nullptr;
    return &slots_[seq - base_].sent;
  }

  uint64_t in_flight() const { return in_flight_; }
  std::size_t unacked() const { return unacked_; }
  uint64_t credit() const { return credit_; }

 private:
  uint64_t credit_ = 0;
  uint64_t seq_ = 0;
  uint64_t in_flight_ = 0;

  // The messages in flight by seq: slots_[i] is seq base_ + i, from the oldest unacknowledged one
  // to the newest sent (sequence numbers only grow, and acknowledgements come mostly in order, so
  // this is a sliding window: no node allocated per message, as a map would).
  struct Slot {
    bool live = false;
    Sent sent;
  };
  Slot& slot_for(uint64_t seq) {
    if (slots_.empty()) base_ = seq;
    while (seq < base_) {  // not from next_seq(): older than the window
      slots_.emplace_front();
      --base_;
    }
    if (seq - base_ >= slots_.size()) slots_.resize(seq - base_ + 1);
    return slots_[seq - base_];
  }
  std::deque<Slot> slots_;
  uint64_t base_ = 0;
  std::size_t unacked_ = 0;
};

}  // namespace psrt
