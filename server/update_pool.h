// A small pool that runs aggregation and optimizer updates off the I/O thread. Finished jobs are
// queued for the I/O thread, which the pool wakes through a Wakeup (no polling). With zero
// threads, jobs run inline in the caller. Each job gets the UpdateScratch of the thread running
// it, so updates reuse their buffers instead of allocating per chunk.
//
// A job that throws (memory, an internal error) does not end the process from a pool thread: the
// pool keeps the first such exception and take_finished() throws it on the I/O thread, which
// tells the job why (Server::run). That job's id is never handed back.
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "core/transport.h"
#include "server/update_scratch.h"

namespace psrt {

class UpdatePool {
 public:
  // `done` is notified after each finished job.
  UpdatePool(int threads, Wakeup& done);
  ~UpdatePool();
  UpdatePool(const UpdatePool&) = delete;
  UpdatePool& operator=(const UpdatePool&) = delete;

  using Job = std::function<void(UpdateScratch&)>;
  // Runs `job`; when it has finished, `id` appears in take_finished().
  void submit(uint64_t id, Job job);
  // `into` becomes the ids finished since the last call. The vectors are swapped, so a caller
  // that keeps `into` lends its capacity back to the pool: no allocation per call once warm.
  // Throws the exception of a job that failed on a pool thread (again on every call: the pool
  // does not recover; with zero threads a job's exception leaves submit() itself).
  void take_finished(std::vector<uint64_t>& into);

 private:
  void run();

  Wakeup& done_wakeup_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<uint64_t, Job>> jobs_;
  UpdateScratch inline_scratch_;  // with zero threads
  std::vector<uint64_t> finished_;
  std::exception_ptr failure_;  // the first job that threw on a pool thread
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace psrt
