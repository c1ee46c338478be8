// What a worker sends once per chunk at start (worker 0's INIT of every chunk it holds, then every
// worker's first PULL), paced: at most `window` messages per server unanswered at a time. Sent all
// at once, a model of more chunks than limits.socket_hwm overflowed a queue, and one dropped INIT
// or PULL stalled the job at its start (VGG-16 at 16 KiB chunks is 17,000 chunks per server).
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

namespace psrt {

class StartPacer {
 public:
  enum class Phase { kNone, kInit, kPull };
  // Chunk ids by server, to go out in this order; `window` is raised to 1 at least.
  void begin(Phase phase, std::vector<std::deque<uint32_t>> by_server, std::size_t window) {
    phase_ = phase;
    todo_ = std::move(by_server);
    out_.assign(todo_.size(), 0);
    window_ = window < 1 ? 1 : window;
    unanswered_ = 0;
    for (const auto& q : todo_) unanswered_ += q.size();
  }
  // Calls send(server, chunk) for each message that may go now.
  template <class Send>
  void release(Send&& send) {
    for (std::size_t s = 0; s < todo_.size(); ++s) release(s, send);
  }
  // `server` answered one of them (an ACK of an INIT, a PARAMS for a PULL): the next may go.
  // False when it had nothing of `phase` unanswered (the answer was to something else).
  template <class Send>
  bool answered(Phase phase, std::size_t server, Send&& send) {
    if (phase != phase_ || server >= out_.size() || out_[server] == 0) return false;
    --out_[server];
    --unanswered_;
    release(server, send);
    return true;
  }
  // Messages not answered yet, sent or not.
  std::size_t unanswered() const { return unanswered_; }
  // The first server with messages of this phase unanswered, if any: whom the start waits for.
  std::optional<std::size_t> waiting_for() const {
    for (std::size_t s = 0; s < todo_.size(); ++s) {
      if (out_[s] > 0 || !todo_[s].empty()) return s;
    }
    return std::nullopt;
  }

 private:
  template <class Send>
  void release(std::size_t s, Send& send) {
    while (!todo_[s].empty() && out_[s] < window_) {
      const uint32_t chunk = todo_[s].front();
      todo_[s].pop_front();
      ++out_[s];
      send(s, chunk);
    }
  }

  Phase phase_ = Phase::kNone;
  std::vector<std::deque<uint32_t>> todo_;
  std::vector<std::size_t> out_;
  std::size_t window_ = 1;
  std::size_t unanswered_ = 0;
};

}  // namespace psrt
