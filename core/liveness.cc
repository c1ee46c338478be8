#include "core/liveness.h"

#include <spdlog/spdlog.h>

#include <cstdio>

#include "core/endpoints.h"

namespace psrt {

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

namespace {
Liveness::Clock::duration seconds(double s) {
  return std::chrono::duration_cast<Liveness::Clock::duration>(std::chrono::duration<double>(s));
}
}  // namespace

Liveness::Liveness(const ClusterConfig& cluster, Clock::time_point now)
    : cluster_(cluster),
      started_at_(now),
      coordinator_seen_(now),
      next_heartbeat_(now),
      last_loop_(now) {}

void Liveness::heard_coordinator(Clock::time_point now) {
  coordinator_seen_ = now;
  coordinator_heard_ = true;
}

std::optional<double> Liveness::gap(Clock::time_point now) {
  std::optional<double> stopped;
  if (now - last_loop_ > seconds(cluster_.peer_timeout_s) / 2) {
    stopped = std::chrono::duration<double>(now - last_loop_).count();
    coordinator_seen_ = now;
    // What it could not hear is not its peers' silence: their messages are waiting, and are
    // judged once read.
    spdlog::warn("this process did not run for {:.1f} s; peers' silence is counted from now",
                 *stopped);
  }
  last_loop_ = now;
  return stopped;
}

bool Liveness::heartbeat_due(Clock::time_point now) {
  if (now < next_heartbeat_) return false;
  next_heartbeat_ = now + seconds(cluster_.heartbeat_s);
  return true;
}

Liveness::Clock::time_point Liveness::start_deadline() const {
  return started_at_ + seconds(cluster_.start_timeout_s);
}

bool Liveness::start_overdue(Clock::time_point now) const {
  return now > start_deadline();
}

std::optional<Liveness::Verdict> Liveness::check(Clock::time_point now, bool membership,
                                                 bool started) const {
  if (!started && start_overdue(now)) {
    if (!coordinator_heard_) {
      return Verdict{Verdict::kUnreachable,
                     coordinator_unreachable(cluster_.coordinator, cluster_.start_timeout_s)};
    }
    return Verdict{Verdict::kStartTimeout,
                   "gave up after " + seconds_text(cluster_.start_timeout_s) + " s waiting for " +
                       (membership ? "the start barrier" : "the membership") +
                       " from the coordinator at " + cluster_.coordinator};
  }
  if (membership && now - coordinator_seen_ > seconds(cluster_.peer_timeout_s)) {
    return Verdict{Verdict::kLostCoordinator, "lost the coordinator (server 0 at " +
                                                  cluster_.coordinator +
                                                  "): nothing heard from it for " +
                                                  seconds_text(cluster_.peer_timeout_s) + " s"};
  }
  return std::nullopt;
}

}  // namespace psrt
