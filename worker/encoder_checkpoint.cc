#include "worker/encoder_checkpoint.h"

#include <spdlog/spdlog.h>

#include <cstring>
#include <filesystem>
#include <functional>

#include "core/byte_io.h"
#include "core/durable_file.h"
#include "core/wire.h"

namespace psrt {

namespace {

constexpr char kMagic[8] = {'P', 'S', 'R', 'T', 'W', 'K', 'P', 'T'};
// 2: the codec's name after the iteration (a file of another codec's was loaded as this one's,
// or refused as "truncated"). 1 is still read.
constexpr uint32_t kVersion = 2;
constexpr uint32_t kMaxCodecName = 64;
// A worker is up to an interval ahead of the servers, which are up to one iteration apart: two
// more files than the servers keep always include the iteration they have in common.
constexpr int kExtraKept = 2;

}  // namespace

EncoderCheckpointer::EncoderCheckpointer(const Config& config, uint32_t rank)
    : config_(config.checkpoint),
      job_id_(config.job.id),
      rank_(rank),
      workers_(uint32_t(config.cluster.workers)),
      codec_(config.compression.codec),
      enabled_(!config.checkpoint.dir.empty() && config.checkpoint.every > 0 &&
               config.compression.codec != "none") {}

std::vector<uint64_t> EncoderCheckpointer::start() {
  if (config_.dir.empty()) return {};
  std::error_code ec;
  if (!config_.resume) {
    // Also when this run writes none (no codec, every_s only): an earlier run's files left
    // behind were loaded by a later --resume, their residuals added to this run's parameters.
    if (std::filesystem::is_directory(config_.dir, ec)) {
      stale_ = list_checkpoint_files(config_.dir, job_id_, "worker", rank_);
    }
    if (enabled_) make_folder(config_.dir);  // a failure shows at the first write
    return {};
  }
  const auto files = list_checkpoint_files(config_.dir, job_id_, "worker", rank_);
  if (!enabled_) {
    // An earlier run's codec state (residuals; the momentum under momentum correction, which
    // without a codec the servers keep, from zero): dropped without a word before.
    if (!files.empty()) {
      spdlog::warn("--resume: {} holds this worker's compression state of an earlier run, which "
                   "this run ({}) does not use: it is dropped, so the run will not match an "
                   "uninterrupted one bit for bit",
                   config_.dir,
                   codec_ == "none" ? "compression.codec none" : "checkpoint.every 0");
    }
    return {};
  }
  std::vector<uint64_t> usable;
  std::string first_error;
  for (const auto& [iteration, path] : files) {
    if (Status st = check(path, iteration, nullptr); !st) {
      spdlog::warn("{}", st.message());
      if (first_error.empty()) first_error = st.message();
    } else {
      usable.push_back(iteration);
    }
  }
  if (usable.empty()) {
    // The job can still resume from the servers' checkpoints, just not bit for bit.
    spdlog::warn(
        "--resume: no usable checkpoint of this worker's compression state in {}{}; it "
        "restarts empty, so the run will not match an uninterrupted one bit for bit",
        config_.dir, first_error.empty() ? std::string() : " (" + first_error + ")");
  }
  return usable;
}

void EncoderCheckpointer::fresh_start() {
  const std::string said =
      remove_earlier_run(stale_, "worker " + std::to_string(rank_), config_.dir);
  if (!said.empty()) spdlog::info("{}", said);
}

void EncoderCheckpointer::remove_unfinished() {
  if (!enabled_) return;
  if (const auto n = remove_unfinished_checkpoints(config_.dir, job_id_, "worker", rank_))
    spdlog::info("removed {} unfinished checkpoint write(s) of worker {} from {}", n, rank_,
                 config_.dir);
}

void EncoderCheckpointer::maybe_write(uint64_t iteration, const GradEncoder& encoder) {
  if (!enabled_ || iteration == 0 || iteration % uint64_t(config_.every) != 0) return;
  ByteWriter w;
  w.bytes(kMagic, sizeof kMagic);
  w.put<uint32_t>(kVersion);
  w.put<uint32_t>(uint32_t(job_id_.size()));
  w.bytes(job_id_.data(), job_id_.size());
  w.put<uint32_t>(rank_);
  w.put<uint32_t>(workers_);
  w.put<uint64_t>(iteration);
  w.put<uint32_t>(uint32_t(codec_.size()));
  w.bytes(codec_.data(), codec_.size());
  const std::string path = checkpoint_file(config_.dir, job_id_, "worker", rank_, iteration);
  Status st = encoder.save_state(w);
  if (st) {
    w.put<uint32_t>(crc32_of(w.out()));
    (void)make_folder(config_.dir);  // removed while the job runs: made again, as the servers do
    st = write_durably(path, w.out());
  }
  if (!st) {
    const std::string& why = st.message();  // write_durably's names the path: once
    spdlog::error("checkpoint {}; the run carries on without it",
                  why.rfind(path, 0) == 0 ? why : path + ": " + why);
    return;
  }
  if (keep_all_.load()) return;
  keep_newest_checkpoints(list_checkpoint_files(config_.dir, job_id_, "worker", rank_),
                          config_.keep + kExtraKept, uint64_t(config_.every));
}

Status EncoderCheckpointer::check(const std::string& path, uint64_t iteration,
                                  const std::function<Status(ByteReader&)>& use) const {
  auto bad = [&](const std::string& why) {
    return Status::error("checkpoint " + path + " rejected: " + why);
  };
  auto bytes = read_whole_file(path, {kMagic, sizeof kMagic});  // no header: not read further
  if (!bytes) return Status::error("checkpoint " + bytes.status().message());
  const std::vector<uint8_t>& b = *bytes;
  if (b.size() < sizeof kMagic + 8 || std::memcmp(b.data(), kMagic, sizeof kMagic) != 0) {
    return bad("not a psrt worker checkpoint (no PSRTWKPT header)");
  }
  uint32_t crc = 0;
  std::memcpy(&crc, b.data() + b.size() - 4, 4);
  if (crc32_of(std::span<const uint8_t>(b).first(b.size() - 4)) != crc) {
    return bad("checksum mismatch (truncated or corrupt)");
  }
  ByteReader r(std::span<const uint8_t>(b).subspan(sizeof kMagic, b.size() - sizeof kMagic - 4));
  const auto version = r.get<uint32_t>();
  if (version != kVersion && version != 1) {
    return bad("format version " + std::to_string(version) + ", this build reads versions 1 to " +
               std::to_string(kVersion));
  }
  const auto id_len = r.get<uint32_t>();
  if (id_len > r.left()) return bad("truncated job id");
  std::string job(id_len, '\0');
  r.take(job.data(), id_len);
  const auto rank = r.get<uint32_t>();
  const auto workers = r.get<uint32_t>();
  const auto it = r.get<uint64_t>();
  if (r.failed()) return bad("truncated header");
  if (job != job_id_ || rank != rank_ || workers != workers_ || it != iteration) {
    return bad("written by job '" + job.substr(0, 64) + "', worker " + std::to_string(rank) +
               " of " + std::to_string(workers) + " at iteration " + std::to_string(it) +
               "; this is job '" + job_id_ + "', worker " + std::to_string(rank_) + " of " +
               std::to_string(workers_) + " at iteration " + std::to_string(iteration));
  }
  if (version >= 2) {
    const auto len = r.get<uint32_t>();
    if (r.failed() || len > kMaxCodecName || len > r.left()) return bad("truncated codec name");
    std::string codec(len, '\0');
    r.take(codec.data(), len);
    if (codec != codec_) {
      return bad("written with compression.codec " + printable(codec) + ", this job's is " +
                 codec_ + ": that state cannot be carried over");
    }
  }
  if (!use) return Status::ok();
  if (Status st = use(r); !st) return bad(st.message());
  return Status::ok();
}

Status EncoderCheckpointer::restore(uint64_t iteration, GradEncoder& encoder) const {
  const std::string path = checkpoint_file(config_.dir, job_id_, "worker", rank_, iteration);
  return check(path, iteration, [&](ByteReader& r) { return encoder.load_state(r); });
}

std::string state_split_warning(const std::vector<uint8_t>& has_state,
                                const std::vector<uint8_t>& held) {
  std::size_t carried = 0, foreign = 0, missing = 0;
  for (std::size_t key = 0; key < has_state.size() && key < held.size(); ++key) {
    if (has_state[key] && held[key]) ++carried;
    if (has_state[key] && !held[key]) ++foreign;
    if (!has_state[key] && held[key]) ++missing;
  }
  if (foreign == 0 && (carried == 0 || missing == 0)) return "";
  return "--resume: this worker's checkpointed compression state is of another split of the "
         "model (placement.mode, partitions or plan changed): " + std::to_string(missing) +
         " of the tensors it pushes now restart empty, and the state of " +
         std::to_string(foreign) +
         " it no longer pushes is not carried over; the run will not match an uninterrupted one "
         "bit for bit";
}

}  // namespace psrt
