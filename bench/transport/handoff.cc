#include "bench/transport/handoff.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace psrt::bench {

double handoff_round_trip_us(int rounds) {
  std::mutex mu;
  std::condition_variable cv;
  bool ball_there = false;  // true: with the other thread
  std::thread other([&] {
    for (int i = 0; i < rounds; ++i) {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return ball_there; });
      ball_there = false;
      cv.notify_all();
    }
  });
  std::vector<double> us;
  us.reserve(std::size_t(rounds));
  for (int i = 0; i < rounds; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    std::unique_lock lock(mu);
    ball_there = true;
    cv.notify_all();
    cv.wait(lock, [&] { return !ball_there; });
    us.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  other.join();
  std::sort(us.begin(), us.end());
  return us.empty() ? 0 : us[us.size() / 2];
}

}  // namespace psrt::bench
