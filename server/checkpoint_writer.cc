#include "server/checkpoint_writer.h"

#include <spdlog/spdlog.h>

#include <utility>

#include "core/durable_file.h"

namespace psrt {

CheckpointWriter::CheckpointWriter(std::string dir, std::string job_id, uint32_t rank, int keep)
    : dir_(std::move(dir)), job_id_(std::move(job_id)), rank_(rank), keep_(keep) {}

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
    std::lock_guard lock(mu_);
    if (next_) {
      spdlog::warn("checkpoint of iteration {} skipped: the write of an earlier one is still "
                   "running and iteration {} is newer (checkpoint.every / every_s too frequent "
                   "for this disk?)",
                   next_->snapshot.iteration, snapshot.iteration);
    }
    next_ = Job{std::move(path), std::move(snapshot)};
    if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
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
  if (Status st = write_checkpoint(job.path, job.snapshot); !st) {
    spdlog::error("{}; the run carries on without it", st.message());
    return;
  }
  ++written_;
  spdlog::info("checkpoint of iteration {} written to {}", job.snapshot.iteration, job.path);
  keep_newest_checkpoints(list_checkpoints(dir_, job_id_, rank_), keep_);
}

}  // namespace psrt
