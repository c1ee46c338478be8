// CreditLink's books: sequence numbers, what is in flight, acknowledgements in any order.
#include <catch2/catch.hpp>

#include "core/credit_link.h"
#include "core/float_checks.h"

#include <cmath>
#include <limits>
#include <vector>

using psrt::CreditLink;

TEST_CASE("credit link: acknowledgements in any order release exactly what was sent", "[core]") {
  CreditLink link(100);
  const uint64_t a = link.send({40, 1, {}, {}});
  const uint64_t b = link.send({50, 2, {}, {}});
  CHECK(b == a + 1);
  CHECK(link.in_flight() == 90);
  CHECK(link.unacked() == 2);
  CHECK_FALSE(link.allows(20));  // 90 + 20 > 100
  CHECK(link.allows(10));
  const uint64_t untracked = link.next_seq();  // a message that takes a seq but waits for nothing
  const uint64_t c = link.send({5, 3, {}, {}});
  CHECK(c == untracked + 1);

  auto second = link.acked(b);  // out of order
  REQUIRE(second);
  CHECK(second->tag == 2);
  CHECK(link.in_flight() == 45);
  CHECK_FALSE(link.acked(b));  // a duplicate
  CHECK_FALSE(link.acked(untracked));
  CHECK_FALSE(link.acked(c + 100));  // never sent
  CHECK_FALSE(link.acked(0));
  REQUIRE(link.acked(a)->tag == 1);
  REQUIRE(link.acked(c)->tag == 3);
  CHECK(link.in_flight() == 0);
  CHECK(link.unacked() == 0);
  CHECK(link.allows(1000));  // nothing in flight: a message larger than the credit goes alone
}

TEST_CASE("credit link: a long run with one old message outstanding keeps its books", "[core]") {
  CreditLink link(0);
  const uint64_t first = link.send({7, 0, {}, {}});
  std::vector<uint64_t> seqs;
  for (int i = 0; i < 1000; ++i) {
    seqs.push_back(link.send({1, uint32_t(i + 1), {}, {}}));
    if (i % 3 == 2) {  // acknowledged in batches, newest first
      for (int j = 0; j < 3; ++j) {
        REQUIRE(link.acked(seqs.back()));
        seqs.pop_back();
      }
    }
  }
  CHECK(link.unacked() == 1 + seqs.size());
  CHECK(link.in_flight() == 7 + seqs.size());
  REQUIRE(link.acked(first)->bytes == 7);
  for (uint64_t s : seqs) REQUIRE(link.acked(s));
  CHECK(link.unacked() == 0);
  CHECK(link.in_flight() == 0);
}

TEST_CASE("credit link: seqs recorded out of order (older than the window) are kept", "[core]") {
  CreditLink link;
  link.sent(10, {3, 10, {}, {}});
  link.sent(4, {2, 4, {}, {}});  // older than anything in flight
  CHECK(link.in_flight() == 5);
  REQUIRE(link.acked(10)->tag == 10);
  REQUIRE(link.acked(4)->tag == 4);
  CHECK_FALSE(link.acked(4));
  CHECK(link.in_flight() == 0);
}

TEST_CASE("count_non_finite counts NaN and both infinities, nothing else", "[core]") {
  std::vector<float> v(37, 1.0f);
  CHECK(psrt::count_non_finite(v) == 0);
  v[0] = std::numeric_limits<float>::quiet_NaN();
  v[17] = std::numeric_limits<float>::infinity();
  v[36] = -std::numeric_limits<float>::infinity();
  v[5] = std::numeric_limits<float>::max();
  v[6] = std::numeric_limits<float>::denorm_min();
  v[7] = -0.0f;
  CHECK(psrt::count_non_finite(v) == 3);
  CHECK(psrt::count_non_finite(std::span<const float>(v).subspan(1, 16)) == 0);
  // Past a vector register's width, with the tail (4099 = 512 x 8 + 3) and the ends covered.
  std::vector<float> big(4099, -2.5f);
  for (std::size_t i : {std::size_t{0}, std::size_t{8}, std::size_t{2049}, std::size_t{4098}}) {
    big[i] = std::numeric_limits<float>::quiet_NaN();
  }
  CHECK(psrt::count_non_finite(big) == 4);
  CHECK(psrt::count_non_finite(std::span<const float>(big).subspan(1, 4096)) == 2);
}
