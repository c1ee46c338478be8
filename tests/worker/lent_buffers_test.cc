// LentBuffers: a key is lent while an owner from lend() lives, reclaim() returns only once every
// owner of its keys is gone (or the book is abandoned), and owners outlive the book safely.
#include <catch2/catch.hpp>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "worker/lent_buffers.h"

using psrt::LentBuffers;

TEST_CASE("A lent key is reclaimed only after its last owner is released", "[worker][lend]") {
  LentBuffers book(3);
  const std::vector<uint32_t> keys{1};
  float values[4] = {1, 2, 3, 4};
  auto owner = book.lend(1, values);
  CHECK(owner.get() == values);
  auto frame = owner;  // a second frame of the same buffer
  CHECK(book.lent() == 1);
  const std::vector<uint32_t> others{0, 2};
  CHECK(book.reclaim(others));  // other keys are free at once

  // Catch's assertions are for the main thread: the compute thread only records what it saw.
  std::atomic<bool> released{false}, reclaimed{false}, after_release{false};
  std::thread compute([&] {
    reclaimed = book.reclaim(keys);
    after_release = released.load();  // never before both owners were gone
  });
  owner.reset();
  CHECK(book.lent() == 1);  // one frame still holds it
  released = true;
  frame.reset();
  compute.join();
  CHECK(reclaimed.load());
  CHECK(after_release.load());
  CHECK(book.lent() == 0);
  CHECK_THROWS_AS(book.lend(3, values), std::invalid_argument);
}

TEST_CASE("Abandoning the book ends a reclaim that would wait for good", "[worker][lend]") {
  auto book = std::make_unique<LentBuffers>(2);
  float value = 0;
  auto stuck = book->lend(0, &value);  // a frame never written: the link is gone
  const std::vector<uint32_t> keys{0};
  std::atomic<bool> reclaimed{true};
  std::thread compute([&] { reclaimed = book->reclaim(keys); });
  book->abandon();
  compute.join();
  CHECK_FALSE(reclaimed.load());
  book.reset();
  stuck.reset();  // the owner outlives the book: its release is still safe
  SUCCEED("released after the book was gone");
}
