// GroupingTrials (worker/grouping_trials.h): which candidate is in force at each iteration, which
// intervals count, the winner, and a switch put off while the iteration before is still sending.
#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

#include "worker/grouping_trials.h"

using psrt::GroupingTrials;
using Clock = GroupingTrials::Clock;

namespace {

// Runs the trials over iterations 1.. whose lengths (ms) depend on the candidate in force;
// returns the candidate in force at each iteration. `blocked`: iterations that cannot switch.
std::vector<std::size_t> drive(GroupingTrials& t, const std::vector<double>& ms_of, int iterations,
                               const std::vector<int>& blocked = {}) {
  std::vector<std::size_t> in_force;
  Clock::time_point now{};
  std::size_t current = 0;
  for (int i = 1; i <= iterations; ++i) {
    const bool can = std::find(blocked.begin(), blocked.end(), i) == blocked.end();
    if (const auto to = t.on_iteration(uint64_t(i), now, can)) {
      CHECK(*to != current);
      CHECK(can);
      current = *to;
    }
    CHECK(current == t.current());
    in_force.push_back(current);
    now += std::chrono::microseconds(int64_t(ms_of[current] * 1000));
  }
  return in_force;
}

}  // namespace

TEST_CASE("grouping trials: after the warm-up the candidates take turns, the fastest is found",
          "[worker][grouping]") {
  GroupingTrials t(3, 2);
  CHECK(GroupingTrials::iterations(3, 2) == 9);
  const auto in_force = drive(t, {150, 120, 135}, 14);
  // 2 untimed, then 0 1 2 0 1 2 timed; at iteration 9 candidate 1 is found fastest, and the
  // switch to it is the caller's: the last candidate stays in force.
  const std::vector<std::size_t> want{0, 0, 0, 1, 2, 0, 1, 2, 2, 2, 2, 2, 2, 2};
  CHECK(in_force == want);
  REQUIRE(t.done());
  CHECK(t.winner() == 1);
  CHECK(t.decided_at() == 9);
  const auto m = t.medians_ms();
  REQUIRE(m.size() == 3);
  CHECK(m[0] == Approx(150));
  CHECK(m[1] == Approx(120));
  CHECK(m[2] == Approx(135));
  CHECK(t.describe({"auto", "ddp", "none"}) == "auto: 150.0 ms, ddp: 120.0 ms, none: 135.0 ms");
}

TEST_CASE("grouping trials: the median decides, and a tie keeps the search's choice",
          "[worker][grouping]") {
  GroupingTrials t(2, 3);
  CHECK(drive(t, {100, 100}, 10) == std::vector<std::size_t>{0, 0, 0, 1, 0, 1, 0, 1, 1, 1});
  CHECK(t.done());
  CHECK(t.winner() == 0);
  CHECK(t.decided_at() == 9);
  // One slow interval of candidate 0 (its first) does not move its median.
  GroupingTrials m(2, 3, 0);
  Clock::time_point now{};
  const std::vector<double> lengths{300, 105, 100, 110, 100, 110};  // 0 1 0 1 0 1
  for (int i = 0; i < 6; ++i) {
    m.on_iteration(uint64_t(i), now, true);
    now += std::chrono::microseconds(int64_t(lengths[std::size_t(i)] * 1000));
  }
  m.on_iteration(6, now, true);
  REQUIRE(m.done());
  CHECK(m.medians_ms()[0] == Approx(100));
  CHECK(m.medians_ms()[1] == Approx(110));
  CHECK(m.winner() == 0);
}

TEST_CASE("grouping trials: a switch waits for an iteration that can take it",
          "[worker][grouping]") {
  GroupingTrials t(2, 1);
  // iteration 4 cannot switch: candidate 0 runs on untimed and the switch comes at 5
  const auto in_force = drive(t, {90, 100}, 8, {4});
  CHECK(in_force == std::vector<std::size_t>{0, 0, 0, 0, 1, 1, 1, 1});
  CHECK(t.winner() == 0);
  CHECK(t.decided_at() == 6);
  CHECK(t.medians_ms()[0] == Approx(90));
  CHECK(t.medians_ms()[1] == Approx(100));
}

TEST_CASE("grouping trials: iterations that do not follow each other give no sample",
          "[worker][grouping]") {
  GroupingTrials t(2, 1, 0);
  Clock::time_point now{};
  CHECK_FALSE(t.on_iteration(5, now, true));                                   // 0, timed
  CHECK(t.on_iteration(9, now + std::chrono::milliseconds(500), true) == 1u);  // a gap
  CHECK(t.medians_ms()[0] == 0);
  CHECK_FALSE(t.on_iteration(10, now + std::chrono::milliseconds(520), true));
  REQUIRE(t.done());
  CHECK(t.medians_ms()[1] == Approx(20));
  CHECK(t.winner() == 1);  // candidate 0 has no timed interval: it cannot win
  CHECK_THROWS(GroupingTrials(1, 3));
}
