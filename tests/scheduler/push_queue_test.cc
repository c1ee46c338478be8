// The push policy driven by a fake transport: a list of what was sent, acknowledged at will.
#include <catch2/catch.hpp>

#include <vector>

#include "scheduler/push_queue.h"

using psrt::Mode;
using psrt::PushQueue;
using psrt::PushUnit;

namespace {

std::vector<PushUnit> chunks(uint32_t first_id, int n, uint64_t bytes) {
  std::vector<PushUnit> v;
  for (int i = 0; i < n; ++i) {
    PushUnit u;
    u.chunk = first_id + static_cast<uint32_t>(i);
    u.bytes = bytes;
    v.push_back(u);
  }
  return v;
}

// Sends everything the credit allows, acknowledging each chunk right away.
std::vector<uint32_t> drain(PushQueue& q) {
  std::vector<uint32_t> sent;
  while (auto u = q.next()) {
    sent.push_back(u->chunk);
    q.acked(u->bytes);
  }
  return sent;
}

}  // namespace

TEST_CASE("fifo keeps arrival order and sends tensors whole", "[scheduler]") {
  PushQueue q(Mode::kFifo, 1 << 20);
  q.add(3, 3, chunks(30, 2, 100));
  q.add(1, 1, chunks(10, 2, 100));
  q.add(2, 2, chunks(20, 1, 100));
  CHECK(drain(q) == std::vector<uint32_t>{30, 31, 10, 11, 20});
  CHECK(q.idle());
}

TEST_CASE("equal priorities keep arrival order", "[scheduler]") {
  for (Mode m : {Mode::kNonpreemptive, Mode::kPreemptive}) {
    PushQueue q(m, 1 << 20);
    q.add(7, 5, chunks(70, 1, 10));
    q.add(4, 5, chunks(40, 1, 10));
    q.add(9, 5, chunks(90, 1, 10));
    CHECK(drain(q) == std::vector<uint32_t>{70, 40, 90});
  }
}

TEST_CASE("nonpreemptive never interleaves two tensors", "[scheduler]") {
  PushQueue q(Mode::kNonpreemptive, 100);  // one chunk in flight at a time
  q.add(5, 5, chunks(50, 3, 100));
  auto first = q.next();
  REQUIRE(first);
  CHECK(first->chunk == 50);
  q.add(0, 0, chunks(0, 2, 100));  // higher priority arrives while tensor 5 is on the wire
  std::vector<uint32_t> sent{first->chunk};
  q.acked(first->bytes);
  for (auto c : drain(q)) sent.push_back(c);
  CHECK(sent == std::vector<uint32_t>{50, 51, 52, 0, 1});
}

TEST_CASE("preemptive sends a newly ready higher-priority chunk right after those in credit",
          "[scheduler]") {
  PushQueue q(Mode::kPreemptive, 250);  // two 100-byte chunks fit
  q.add(5, 5, chunks(50, 4, 100));
  auto a = q.next();
  auto b = q.next();
  REQUIRE(a);
  REQUIRE(b);
  CHECK(!q.next());  // a third would exceed the credit
  q.add(0, 0, chunks(0, 2, 100));
  CHECK(!q.next());  // still no credit: what is in flight stays in flight
  q.acked(a->bytes);
  auto c = q.next();
  REQUIRE(c);
  CHECK(c->chunk == 0);  // the new higher-priority chunk overtakes 52 and 53
  q.acked(b->bytes);
  q.acked(c->bytes);
  CHECK(drain(q) == std::vector<uint32_t>{1, 52, 53});
}

TEST_CASE("credit is never exceeded", "[scheduler]") {
  for (Mode m : {Mode::kFifo, Mode::kFifoChunked, Mode::kNonpreemptive, Mode::kPreemptive}) {
    PushQueue q(m, 1000);
    for (uint32_t k = 0; k < 10; ++k) q.add(9 - k, 9 - k, chunks(k * 10, 5, 130 + k));
    std::vector<PushUnit> in_flight;
    uint64_t max_seen = 0;
    std::size_t sent = 0;
    while (!q.idle()) {
      while (auto u = q.next()) {
        in_flight.push_back(*u);
        ++sent;
      }
      uint64_t total = 0;
      for (const auto& u : in_flight) total += u.bytes;
      CHECK(total == q.in_flight());
      max_seen = std::max(max_seen, total);
      REQUIRE(!in_flight.empty());
      q.acked(in_flight.front().bytes);  // the receiver acknowledges the oldest
      in_flight.erase(in_flight.begin());
    }
    CHECK(sent == 50);
    CHECK(max_seen <= 1000);
    CHECK(max_seen > 1000 - 140);  // the credit was actually used
  }
}

TEST_CASE("a chunk larger than the credit goes when nothing is in flight", "[scheduler]") {
  PushQueue q(Mode::kPreemptive, 10);
  q.add(0, 0, chunks(0, 2, 100));
  auto a = q.next();
  REQUIRE(a);
  CHECK(!q.next());
  q.acked(100);
  CHECK(q.next());
}

TEST_CASE("bigdl holds everything until the iteration's last tensor, then parameter order",
          "[scheduler]") {
  PushQueue q(Mode::kBigdl, 1 << 20);
  q.expect_tensors(3);
  q.add(2, 2, chunks(20, 1, 10));
  q.add(1, 1, chunks(10, 2, 10));
  CHECK(!q.next());
  q.add(0, 0, chunks(0, 1, 10));
  CHECK(drain(q) == std::vector<uint32_t>{0, 10, 11, 20});
  // the next iteration is held again
  q.add(2, 2, chunks(20, 1, 10));
  CHECK(!q.next());
}

TEST_CASE("fifo_chunked follows arrival order chunk by chunk", "[scheduler]") {
  PushQueue q(Mode::kFifoChunked, 1 << 20);
  q.add(3, 3, chunks(30, 2, 10));
  q.add(0, 0, chunks(0, 1, 10));
  CHECK(drain(q) == std::vector<uint32_t>{30, 31, 0});
}

TEST_CASE("mode names round trip", "[scheduler]") {
  for (const auto& n : psrt::mode_names()) {
    auto m = psrt::parse_mode(n);
    REQUIRE(m);
    CHECK(std::string(psrt::mode_name(*m)) == n);
  }
  CHECK(!psrt::parse_mode("lifo"));
}
