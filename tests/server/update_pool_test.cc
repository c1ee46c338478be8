// The servers' update pool (server/update_pool.h): every submitted job runs once and its id is
// handed back once, with the pool's threads or inline, through a vector the caller keeps; a job
// that throws reaches the caller's thread.
#include <catch2/catch.hpp>

#include <poll.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/transport.h"
#include "server/update_pool.h"

using namespace psrt;

namespace {

// Collects finished ids until `n` have come back, waiting on the pool's wakeup as the server's
// I/O thread does (no busy polling).
std::vector<uint64_t> collect(UpdatePool& pool, Wakeup& done, std::size_t n) {
  std::vector<uint64_t> all, batch;
  while (all.size() < n) {
    pollfd p{done.fd(), POLLIN, 0};
    REQUIRE(::poll(&p, 1, 10000) == 1);
    done.drain();
    pool.take_finished(batch);
    all.insert(all.end(), batch.begin(), batch.end());
  }
  return all;
}

}  // namespace

TEST_CASE("the update pool runs every job once and returns each id once", "[server]") {
  for (int threads : {0, 1, 3}) {
    CAPTURE(threads);
    Wakeup done;
    UpdatePool pool(threads, done);
    std::atomic<int> ran{0};
    constexpr uint64_t kJobs = 200;
    for (uint64_t id = 0; id < kJobs; ++id) {
      pool.submit(id, [&ran](UpdateScratch&) { ran.fetch_add(1); });
    }
    auto ids = collect(pool, done, kJobs);
    CHECK(ran.load() == int(kJobs));
    std::sort(ids.begin(), ids.end());
    REQUIRE(ids.size() == kJobs);
    for (uint64_t id = 0; id < kJobs; ++id) CHECK(ids[id] == id);
    // Nothing more to take: the caller's vector comes back empty, whatever it held.
    std::vector<uint64_t> after{7, 8, 9};
    pool.take_finished(after);
    CHECK(after.empty());
  }
}

TEST_CASE("a job that throws reaches the caller's thread, not std::terminate", "[server]") {
  for (int threads : {1, 3}) {
    CAPTURE(threads);
    Wakeup done;
    UpdatePool pool(threads, done);
    pool.submit(0, [](UpdateScratch&) {});
    pool.submit(1, [](UpdateScratch&) { throw std::runtime_error("update 1 failed"); });
    // Waits as the I/O thread does until the failure is handed over; the good job's id may come
    // back first.
    std::vector<uint64_t> batch;
    bool thrown = false;
    for (int wakeups = 0; wakeups < 3 && !thrown; ++wakeups) {
      pollfd p{done.fd(), POLLIN, 0};
      REQUIRE(::poll(&p, 1, 10000) == 1);
      done.drain();
      try {
        pool.take_finished(batch);
        for (uint64_t id : batch) CHECK(id == 0);
      } catch (const std::runtime_error& e) {
        CHECK(std::string(e.what()) == "update 1 failed");
        thrown = true;
      }
    }
    REQUIRE(thrown);
    // The pool stays failed (it does not hand back the failed job's id) and still joins cleanly.
    CHECK_THROWS_WITH(pool.take_finished(batch), "update 1 failed");
  }
}

TEST_CASE("without threads a job's exception leaves submit", "[server]") {
  Wakeup done;
  UpdatePool pool(0, done);
  CHECK_THROWS_WITH(pool.submit(0, [](UpdateScratch&) { throw std::runtime_error("inline"); }),
                    "inline");
}
