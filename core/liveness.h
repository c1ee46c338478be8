// The control-plane clock every daemon keeps on its I/O thread: when it last ran, when it last
// heard the coordinator, when its next heartbeat is due, and what the cluster's timeouts say
// (cluster.start_timeout_s, cluster.peer_timeout_s). Server and PsClient share it; the
// coordinator's view of every other peer stays in server/coordinator.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "core/config.h"

namespace psrt {

// A duration in seconds as people write it: 10 -> "10", 0.25 -> "0.25" (std::to_string gave
// "10.000000").
std::string seconds_text(double s);

class Liveness {
 public:
  using Clock = std::chrono::steady_clock;

  Liveness(const ClusterConfig& cluster, Clock::time_point now);

  // A message from the coordinator arrived.
  void heard_coordinator(Clock::time_point now);
  Clock::time_point started_at() const { return started_at_; }
  Clock::time_point next_heartbeat() const { return next_heartbeat_; }

  // Once per loop pass. When this process did not run for over half the peer timeout (stopped,
  // swapped out), returns how long (and logs it): what it could not hear is not its peers'
  // silence, so the coordinator's clock restarts now (callers restart their own such clocks too).
  std::optional<double> gap(Clock::time_point now);
  // True when a heartbeat is due now; the next one is scheduled.
  bool heartbeat_due(Clock::time_point now);

  struct Verdict {
    enum Kind { kUnreachable, kStartTimeout, kLostCoordinator } kind;
    std::string message;
  };
  // For a process other than the coordinator, given whether it has the membership and has passed
  // the start barrier: the coordinator never answered (a start-up error), the start did not
  // come in time, or the coordinator went silent. nullopt: all is well.
  std::optional<Verdict> check(Clock::time_point now, bool membership, bool started) const;
  // For the coordinator: whether the start barrier is overdue, and when it will be.
  bool start_overdue(Clock::time_point now) const;
  Clock::time_point start_deadline() const;

 private:
  ClusterConfig cluster_;
  Clock::time_point started_at_, coordinator_seen_, next_heartbeat_, last_loop_;
  bool coordinator_heard_ = false;
};

}  // namespace psrt
