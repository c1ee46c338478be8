// When and what a server checkpoints, and how it resumes (README "Checkpoints"). Each chunk is
// copied the moment its update to a checkpoint iteration completes (the chunks of one server
// reach an iteration at different times, and a fast one may be an iteration further before the
// slowest arrives); once the last chunk has been copied the snapshot goes to a CheckpointWriter,
// which writes the file on a thread of its own. Runs on the I/O thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/status.h"
#include "server/checkpoint_file.h"
#include "server/checkpoint_writer.h"
#include "server/chunk_table.h"

namespace psrt {

class Checkpointer {
 public:
  using Clock = std::chrono::steady_clock;
  // `failed`: after a write that failed, on the writer's thread (CheckpointWriter).
  Checkpointer(const Config& config, uint32_t rank, std::function<void()> failed = {});

  bool enabled() const { return !config_.dir.empty(); }
  // Start-up. Fresh run: notes this server's old checkpoint files, for fresh_start(). --resume:
  // checks every one of them and returns the iterations of those that are complete and this
  // job's (a rejected file is logged with the reason). Throws ConfigError when resuming finds none.
  std::vector<uint64_t> start();
  // Once the coordinator has found the whole job starting fresh (the membership): removes the
  // files start() noted. Not at start-up: a process started without --resume beside others
  // that resume (by hand) deleted its files before the coordinator refused the mix.
  void fresh_start();
  // Once the membership is in, fresh or resumed: removes this server's unfinished writes.
  void remove_unfinished();
  // After chunk `c` completed its update to c.iteration: copies it if that iteration is
  // checkpointed, and writes the file once every chunk of the table has been copied.
  void on_update(const ChunkState& c, const ChunkTable& table);
  // Loads this server's checkpoint of `iteration` into `table` (params, optimizer state,
  // iteration, published) and removes its later checkpoints. The error names the file.
  Status restore(ChunkTable& table, uint64_t iteration);
  uint64_t written() const { return writer_.written(); }
  uint64_t failed() const { return writer_.failed(); }
  // No checkpoint is removed from now on (server/server_keep.cc). Any thread.
  void keep_all() { writer_.keep_all(); }
  // After the run: finishes the writes and says how many failed (an error line; nothing when
  // none did).
  void summarize();
  // Blocks until every checkpoint submitted so far is on disk (or failed).
  void drain() { writer_.drain(); }

 private:
  bool wanted(uint64_t iteration);
  Status check_identity(const ShardSnapshot& s, const std::string& path) const;

  CheckpointConfig config_;
  std::string job_id_;
  uint32_t rank_;
  uint32_t servers_, workers_;
  std::string optimizer_;  // optimizer.type
  Clock::time_point last_;
  uint64_t decided_ = 0;  // iterations up to this one have been decided
  std::map<uint64_t, bool> wanted_;
  struct Pending {
    ShardSnapshot snapshot;
    std::size_t copied = 0;
  };
  std::map<uint64_t, Pending> pending_;
  std::map<uint64_t, std::string> stale_;  // a fresh run's old files, removed by fresh_start()
  CheckpointWriter writer_;  // last: its destructor finishes the writes before the rest goes
};

}  // namespace psrt
