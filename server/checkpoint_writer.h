// Writes a server's checkpoint files on a thread of its own, so that a large shard's write and
// fsync never hold up the I/O thread (its heartbeats, replies and the peers' timeouts). One write
// at a time and at most one snapshot waiting behind it; a third submit blocks until the waiting
// one is taken (every checkpoint is written: a resume needs one that every server has). The
// destructor finishes what was submitted.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "server/checkpoint_file.h"

namespace psrt {

class CheckpointWriter {
 public:
  // Keeps the newest `keep` checkpoints of (`dir`, `job_id`, `rank`), and the newest of an
  // iteration that is a multiple of `every` (when > 0), after each write, until keep_all().
  // `failed` runs on the writer thread after each write that failed (may be empty).
  CheckpointWriter(std::string dir, std::string job_id, uint32_t rank, int keep,
                   std::function<void()> failed = {}, uint64_t every = 0);
  ~CheckpointWriter();
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  void submit(std::string path, ShardSnapshot snapshot);
  // Blocks until everything submitted so far is written (or failed).
  void drain();
  uint64_t written() const { return written_.load(); }
  uint64_t failed() const { return failed_.load(); }
  // Removes no checkpoint from now on (one server's failed write: the newest checkpoint every
  // server has may be older than this one's `keep` newest). Any thread.
  void keep_all() { keep_all_.store(true); }
  bool keeps_all() const { return keep_all_.load(); }

 private:
  struct Job {
    std::string path;
    ShardSnapshot snapshot;
  };
  void run();
  void write(const Job& job);

  std::string dir_, job_id_;
  uint32_t rank_;
  int keep_;
  uint64_t every_;
  std::function<void()> on_failure_;
  std::atomic<bool> keep_all_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::optional<Job> next_;
  bool busy_ = false;
  bool stop_ = false;
  std::atomic<uint64_t> written_{0};
  std::atomic<uint64_t> failed_{0};
  std::thread thread_;  // started by the first submit
};

}  // namespace psrt
