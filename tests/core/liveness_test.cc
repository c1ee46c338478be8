// The control-plane clock both daemons keep: heartbeats, the start timeout, the coordinator's
// silence, and a process that was stopped not blaming its peers.
#include "core/liveness.h"

#include <catch2/catch.hpp>

using namespace psrt;
using namespace std::chrono_literals;

namespace {
ClusterConfig cluster() {
  ClusterConfig c;
  c.coordinator = "tcp://10.0.0.1:5000";
  c.start_timeout_s = 60;
  c.heartbeat_s = 0.5;
  c.peer_timeout_s = 10;
  return c;
}
}  // namespace

TEST_CASE("liveness: heartbeats come due once per interval", "[unit][liveness]") {
  const auto t0 = Liveness::Clock::now();
  Liveness l(cluster(), t0);
  CHECK(l.heartbeat_due(t0));
  CHECK_FALSE(l.heartbeat_due(t0 + 100ms));
  CHECK(l.next_heartbeat() == t0 + 500ms);
  CHECK(l.heartbeat_due(t0 + 600ms));
  CHECK_FALSE(l.heartbeat_due(t0 + 700ms));
}

TEST_CASE("liveness: the start timeout tells an unreachable coordinator from a late start",
          "[unit][liveness]") {
  const auto t0 = Liveness::Clock::now();
  Liveness l(cluster(), t0);
  CHECK_FALSE(l.check(t0 + 59s, false, false));
  auto v = l.check(t0 + 61s, false, false);
  REQUIRE(v);
  CHECK(v->kind == Liveness::Verdict::kUnreachable);
  CHECK_THAT(v->message, Catch::Contains("10.0.0.1"));
  l.heard_coordinator(t0 + 1s);
  v = l.check(t0 + 61s, false, false);
  REQUIRE(v);
  CHECK(v->kind == Liveness::Verdict::kStartTimeout);
  CHECK_THAT(v->message, Catch::Contains("the membership"));
  v = l.check(t0 + 61s, true, false);
  REQUIRE(v);
  CHECK_THAT(v->message, Catch::Contains("the start barrier"));
  CHECK(l.start_overdue(t0 + 61s));
  l.heard_coordinator(t0 + 58s);
  CHECK_FALSE(l.check(t0 + 61s, true, true));  // started, and the coordinator heard lately
}

TEST_CASE("liveness: a silent coordinator is lost, unless this process was the one stopped",
          "[unit][liveness]") {
  const auto t0 = Liveness::Clock::now();
  Liveness l(cluster(), t0);
  l.heard_coordinator(t0);
  CHECK_FALSE(l.check(t0 + 9s, true, true));
  auto v = l.check(t0 + 11s, true, true);
  REQUIRE(v);
  CHECK(v->kind == Liveness::Verdict::kLostCoordinator);
  CHECK_THAT(v->message, Catch::Contains("lost the coordinator"));
  CHECK_THAT(v->message, Catch::EndsWith("nothing heard from it for 10 s"));  // not 10.000000
  CHECK(seconds_text(0.25) == "0.25");
  CHECK_FALSE(l.check(t0 + 11s, false, false));  // no membership yet: nothing to lose
  // The loop ran at 1 s, then not for 29 s (SIGSTOP): silence is counted from 30 s.
  CHECK_FALSE(l.gap(t0 + 1s));
  const auto gap = l.gap(t0 + 30s);
  REQUIRE(gap);
  CHECK(*gap == Approx(29.0));
  CHECK_FALSE(l.check(t0 + 35s, true, true));
  CHECK(l.check(t0 + 41s, true, true));
}
