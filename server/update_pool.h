// A small pool that runs aggregation and optimizer updates off the I/O thread. Finished jobs are
// queued for the I/O thread, which the pool wakes through a Wakeup (no polling). With zero
// threads, jobs run inline in the caller.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "core/transport.h"

namespace psrt {

class UpdatePool {
 public:
  // `done` is notified after each finished job.
  UpdatePool(int threads, Wakeup& done);
  ~UpdatePool();
  UpdatePool(const UpdatePool&) = delete;
  UpdatePool& operator=(const UpdatePool&) = delete;

  // Runs `job`; when it has finished, `id` appears in take_finished().
  void submit(uint64_t id, std::function<void()> job);
  std::vector<uint64_t> take_finished();

 private:
  void run();

  Wakeup& done_wakeup_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<uint64_t, std::function<void()>>> jobs_;
  std::vector<uint64_t> finished_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace psrt
