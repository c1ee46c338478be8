#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "scheduler/sim/action.h"
#include "scheduler/sim/event_queue.h"

using psrt::sim::Action;
using psrt::sim::EventQueue;

TEST_CASE("the event queue runs by time, then in the order events were scheduled", "[sim]") {
  EventQueue q;
  std::string log;
  q.at(2.0, [&] { log += "c"; });
  q.at(1.0, [&] { log += "a"; });
  q.at(2.0, [&] { log += "d"; });
  q.at(1.0, [&] {
    log += "b";
    // Scheduled now for now: after what was scheduled earlier for this instant.
    q.at(1.0, [&] { log += "b2"; });
    q.at(2.0, [&] { log += "e"; });
  });
  CHECK(q.run() == 6);
  CHECK(log == "abb2cde");
  CHECK(q.now() == 2.0);
  CHECK_THROWS_AS(q.at(1.5, [] {}), std::logic_error);
  CHECK_THROWS_AS(q.at(std::nan(""), [] {}), std::logic_error);
}

TEST_CASE("decisions run after every state change of their instant", "[sim]") {
  EventQueue q;
  std::vector<std::string> log;
  q.at(1.0, [&] {
    log.push_back("change1");
    q.decide([&] {
      log.push_back("decide1");
      // A state change a decision makes for now runs before the decisions still waiting.
      q.at(1.0, [&] { log.push_back("change-from-decision"); });
    });
    q.decide([&] { log.push_back("decide2"); });
  });
  q.at(1.0, [&] { log.push_back("change2"); });
  q.at(3.0, [&] { log.push_back("later"); });
  q.run();
  const std::vector<std::string> want{"change1", "change2", "decide1", "change-from-decision",
                                      "decide2", "later"};
  CHECK(log == want);
}

TEST_CASE("an action holds small and large callables and frees each once", "[sim]") {
  auto token = std::make_shared<int>(7);
  int sum = 0;
  {
    Action small = [token, &sum] { sum += *token; };  // inline
    std::array<char, 4 * Action::kInline> big{};
    big[0] = 5;
    Action large = [token, big, &sum] { sum += big[0]; };  // on the heap
    CHECK(token.use_count() == 3);
    Action moved = std::move(large);
    CHECK_FALSE(large);
    CHECK(token.use_count() == 3);
    small();
    moved();
    Action assigned;
    assigned = std::move(small);
    assigned();
    CHECK(token.use_count() == 3);
    // Move-only captures work (std::function would refuse them).
    auto owned = std::make_unique<int>(100);
    Action unique = [p = std::move(owned), &sum] { sum += *p; };
    unique();
  }
  CHECK(sum == 7 + 5 + 7 + 100);
  CHECK(token.use_count() == 1);
}
