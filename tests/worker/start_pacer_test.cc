// StartPacer: at most `window` messages per server unanswered, in order, each answer letting the
// next one to its server go; answers to nothing are told apart.
#include <catch2/catch.hpp>

#include <utility>
#include <vector>

#include "worker/start_pacer.h"

using namespace psrt;

TEST_CASE("the start pacer keeps each server's unanswered messages within the window",
          "[unit][worker]") {
  constexpr auto kInit = StartPacer::Phase::kInit;
  constexpr auto kPull = StartPacer::Phase::kPull;
  StartPacer p;
  std::vector<std::pair<std::size_t, uint32_t>> sent;
  auto send = [&](std::size_t s, uint32_t c) { sent.emplace_back(s, c); };
  p.begin(kInit, {{0, 1, 2, 3, 4}, {5, 6}, {}}, 2);
  CHECK(p.unanswered() == 7);
  p.release(send);
  CHECK(sent == std::vector<std::pair<std::size_t, uint32_t>>{{0, 0}, {0, 1}, {1, 5}, {1, 6}});
  sent.clear();
  CHECK(p.answered(kInit, 0, send));
  CHECK(sent == std::vector<std::pair<std::size_t, uint32_t>>{{0, 2}});
  CHECK_FALSE(p.answered(kInit, 2, send));  // server 2 was sent nothing
  CHECK_FALSE(p.answered(kPull, 0, send));  // an answer to something else
  CHECK_FALSE(p.answered(kInit, 7, send));  // no such server
  CHECK(p.answered(kInit, 1, send));
  CHECK(p.answered(kInit, 1, send));
  CHECK_FALSE(p.answered(kInit, 1, send));  // both of server 1's answered already
  for (int i = 0; i < 4; ++i) CHECK(p.answered(kInit, 0, send));
  CHECK(sent == std::vector<std::pair<std::size_t, uint32_t>>{{0, 2}, {0, 3}, {0, 4}});
  CHECK(p.unanswered() == 0);
  p.begin(kPull, {{9}}, 0);  // a window of 0 is taken as 1
  sent.clear();
  p.release(send);
  CHECK(sent.size() == 1);
}
