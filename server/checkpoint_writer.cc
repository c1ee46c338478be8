#include "server/checkpoint_writer.h"

#include <spdlog/spdlog.h>

#include <utility>

#include "core/durable_file.h"

namespace psrt {

CheckpointWriter::CheckpointWriter(std::string dir, std::string job_id, uint32_t rank, int keep,
                                   std::function<void()> failed, uint64_t every)
    : dir_(std::move(dir)),
      job_id_(std::move(job_id)),
      rank_(rank),
      keep_(keep),
      every_(every),
      on_failure_(std::move(failed)) {}

CheckpointWriter::~CheckpointWriter() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void CheckpointWriter::submit(std::string path, ShardSnapshot snapshot) {
  {
    std::unique_lock lock(mu_);
    if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
    if (next_) {
      // Every checkpoint is written (resume needs one all servers share): when the disk is slower
      // than checkpoint.every, the caller waits here, as it would for a write of its own.
      spdlog::warn("checkpoint of iteration {} waits for the write of iteration {} to finish "
                   "(checkpoint.every / every_s too frequent for this disk?)",
                   snapshot.iteration, next_->snapshot.iteration);
      cv_.wait(lock, [&] { return !next_; });
    }
    next_ = Job{std::move(path), std::move(snapshot)};
  }
  cv_.notify_all();
}

void CheckpointWriter::drain() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return !next_ && !busy_; });
}

void CheckpointWriter::run() {
  std::unique_lock lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return next_ || stop_; });
    if (!next_) return;  // stopping, and nothing left to write
    Job job = std::move(*next_);
    next_.reset();
    busy_ = true;
    lock.unlock();
    write(job);
    lock.lock();
    busy_ = false;
    cv_.notify_all();
  }
}

void CheckpointWriter::write(const Job& job) {
  // A folder removed while the job runs (a clean-up) is made again, as at start: every later
  // write failed, and the run ended with no checkpoint at all. A failure is the write's to say.
  (void)make_folder(dir_);
  if (Status st = write_checkpoint(job.path, job.snapshot); !st) {
    spdlog::error("{}; the run carries on without it", st.message());
    ++failed_;
    keep_all();  // this server's newest may not be the others': their older ones must stay
    if (on_failure_) on_failure_();
    return;
  }
  ++written_;
  spdlog::info("checkpoint of iteration {} written to {}", job.snapshot.iteration, job.path);
  if (!keep_all_.load()) {
    keep_newest_checkpoints(list_checkpoints(dir_, job_id_, rank_), keep_, every_);
  }
}

}  // namespace psrt
