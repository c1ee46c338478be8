// A worker's own checkpoint (README "Checkpoints"): the codec state its GradEncoder carries from
// one iteration to the next (error-feedback residuals, momentum correction, LACO's calibration),
// written at the top of each checkpointed iteration beside the servers' files as
// JOB-worker-RANK-ITERATION.ckpt. Only with a compression codec and checkpoint.every (a worker
// cannot follow the servers' every_s clocks). Layout: "PSRTWKPT", u32 version (2), string job
// id, u32 rank, u32 workers, u64 iteration, string codec (compression.codec; not in version 1),
// the encoder's bytes, u32 CRC32 of all before it. Strings: u32 length, then the bytes.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/byte_io.h"
#include "core/config.h"
#include "core/status.h"
#include "worker/grad_encoder.h"

namespace psrt {

class EncoderCheckpointer {
 public:
  EncoderCheckpointer(const Config& config, uint32_t rank);

  // Whether this worker writes checkpoints (and needs one to resume).
  bool enabled() const { return enabled_; }
  // Start-up, as Checkpointer::start on the servers: fresh run, notes this worker's old files
  // (with a codec or not) for fresh_start(); --resume, returns the iterations of its usable files
  // (a rejected one, another codec's among them, is logged; none at all is a warning: the job
  // resumes with this worker's codec state empty).
  std::vector<uint64_t> start();
  // Once the membership says the job starts fresh: removes the files start() noted.
  void fresh_start();
  // Once the membership is in, fresh or resumed: removes this worker's unfinished writes.
  void remove_unfinished();
  // At the top of iteration `iteration`: writes the encoder's state if it is a checkpoint
  // iteration. A failure is logged; the run carries on.
  void maybe_write(uint64_t iteration, const GradEncoder& encoder);
  // Loads the checkpoint of `iteration` into `encoder`; the error names the file.
  Status restore(uint64_t iteration, GradEncoder& encoder) const;
  // A server could not write a checkpoint: no file is removed from now on, so that the newest
  // iteration every process has stays (server/server_keep.cc). Any thread; true the first time.
  bool keep_all() { return !keep_all_.exchange(true); }

 private:
  // Checks file `path` (magic, CRC, version, job, rank, workers, iteration) and hands a reader
  // over the encoder's bytes to `use` (if any). The error names the file.
  Status check(const std::string& path, uint64_t iteration,
               const std::function<Status(ByteReader&)>& use) const;

  CheckpointConfig config_;
  std::string job_id_;
  uint32_t rank_, workers_;
  std::string codec_;  // compression.codec
  bool enabled_;
  std::map<uint64_t, std::string> stale_;  // a fresh run's old files, removed by fresh_start()
  std::atomic<bool> keep_all_{false};
};

// After a resume: the warning that the state restored (`has_state`, by tensor key) is of another
// split of the model than the tensors this worker pushes now (`held`): state of tensors it no
// longer pushes, or state for some of its tensors but not all. Empty when it fits (or when
// nothing was restored).
std::string state_split_warning(const std::vector<uint8_t>& has_state,
                                const std::vector<uint8_t>& held);

}  // namespace psrt
