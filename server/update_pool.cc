#include "server/update_pool.h"

namespace psrt {

UpdatePool::UpdatePool(int threads, Wakeup& done) : done_wakeup_(done) {
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { run(); });
}

UpdatePool::~UpdatePool() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void UpdatePool::submit(uint64_t id, Job job) {
  if (threads_.empty()) {
    job(inline_scratch_);
    std::lock_guard lock(mu_);
    finished_.push_back(id);
    done_wakeup_.notify();
    return;
  }
  {
    std::lock_guard lock(mu_);
    jobs_.emplace_back(id, std::move(job));
  }
  cv_.notify_one();
}

void UpdatePool::take_finished(std::vector<uint64_t>& into) {
  into.clear();
  std::lock_guard lock(mu_);
  if (failure_) std::rethrow_exception(failure_);
  into.swap(finished_);
}

void UpdatePool::run() {
  UpdateScratch scratch;  // this thread's, reused by every job it runs
  while (true) {
    std::pair<uint64_t, Job> item;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // stopping, nothing left
      item = std::move(jobs_.front());
      jobs_.pop_front();
    }
    std::exception_ptr failed;
    try {
      item.second(scratch);
    } catch (...) {
      failed = std::current_exception();
    }
    {
      std::lock_guard lock(mu_);
      if (!failed) {
        finished_.push_back(item.first);
      } else if (!failure_) {
        failure_ = failed;
      }
    }
    done_wakeup_.notify();
  }
}

}  // namespace psrt
