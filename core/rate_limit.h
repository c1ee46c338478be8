// Bounds on what a flood of bad input can make a process do: log lines per kind of warning (the
// rest summed up in one line with a count) and replies per peer (the rest dropped and counted).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>

namespace psrt {

class LogLimiter {
 public:
  using Clock = std::chrono::steady_clock;
  // At most `lines_per_s` lines (at least one) per kind in each one-second window.
  explicit LogLimiter(double lines_per_s)
      : per_window_(lines_per_s < 1 ? 1 : uint64_t(lines_per_s)) {}

  // Logs `line` at warn level, or counts it when `kind` has had its lines in this window.
  void warn(const std::string& kind, const std::string& line, Clock::time_point now = Clock::now());
  // Writes the count line of every window that is over (call it now and then, and at the end).
  void flush(Clock::time_point now, bool all = false);
  uint64_t suppressed() const { return suppressed_; }

 private:
  struct Window {
    Clock::time_point start;
    uint64_t shown = 0;
    uint64_t dropped = 0;
  };
  void close(const std::string& kind, Window& w, Clock::time_point now);

  uint64_t per_window_;
  uint64_t suppressed_ = 0;
  std::map<std::string, Window> windows_;
};

class PeerBudget {
 public:
  using Clock = std::chrono::steady_clock;
  // Each peer may take `per_s` a second, in bursts of as many; at most `max_peers` are tracked
  // (beyond, the table starts over: a peer may then get one more burst).
  explicit PeerBudget(double per_s, std::size_t max_peers = 4096)
      : per_s_(per_s), burst_(per_s < 1 ? 1 : per_s), max_peers_(max_peers) {}

  // Whether `peer` may have one more; false counts a drop.
  bool allow(const std::string& peer, Clock::time_point now = Clock::now());
  uint64_t dropped() const { return dropped_; }

 private:
  struct Bucket {
    double tokens;
    Clock::time_point last;
  };
  double per_s_;
  double burst_;
  std::size_t max_peers_;
  uint64_t dropped_ = 0;
  std::map<std::string, Bucket> buckets_;
};

}  // namespace psrt
