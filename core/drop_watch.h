// A connection that dropped and came back (ZeroMQ reconnects by itself) lost what was in flight on
// it: a push or a reply that nothing sends again, so both ends waited, heartbeats flowing, until
// cluster.progress_timeout_s (300 s) and then blamed a healthy peer. A process whose connection
// drops gives up instead, naming it, after a grace that lets the job's own word arrive first where
// the drop was a peer ending (the job's end, a peer that gave up or was stopped).
#pragma once

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>

namespace psrt {

class DropWatch {
 public:
  using Clock = std::chrono::steady_clock;
  explicit DropWatch(double grace_s) : grace_(std::chrono::duration<double>(grace_s)) {}
  // Two heartbeats, and a second at least: the job's word travels on the same links.
  static double grace_for(double heartbeat_s) { return std::max(1.0, 2 * heartbeat_s); }

  // The connection to `peer` ("server 1") dropped at `now`; the first drop is the one told.
  void dropped(const std::string& peer, Clock::time_point now) {
    if (!peer_.empty()) return;
    peer_ = peer;
    at_ = now;
  }
  // Why to give up, once the grace after the first drop is over.
  std::optional<std::string> due(Clock::time_point now) const {
    if (peer_.empty() || now - at_ < grace_) return std::nullopt;
    return "the connection to " + peer_ +
           " dropped (reset on the way, or its process ended): what was in flight on it is gone, "
           "so the job cannot go on (checkpoint.every and --resume continue a job)";
  }

 private:
  std::chrono::duration<double> grace_;
  std::string peer_;
  Clock::time_point at_{};
};

}  // namespace psrt
