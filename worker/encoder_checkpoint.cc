#include "worker/encoder_checkpoint.h"

#include <spdlog/spdlog.h>

#include <cstring>
#include <filesystem>
#include <functional>

#include "core/byte_io.h"
#include "core/durable_file.h"

namespace psrt {

namespace {

constexpr char kMagic[8] = {'P', 'S', 'R', 'T', 'W', 'K', 'P', 'T'};
constexpr uint32_t kVersion = 1;
// A worker is up to an interval ahead of the servers, which are up to one iteration apart: two
// more files than the servers keep always include the iteration they have in common.
constexpr int kExtraKept = 2;

}  // namespace

EncoderCheckpointer::EncoderCheckpointer(const Config& config, uint32_t rank)
    : config_(config.checkpoint),
      job_id_(config.job.id),
      rank_(rank),
      workers_(uint32_t(config.cluster.workers)),
      enabled_(!config.checkpoint.dir.empty() && config.checkpoint.every > 0 &&
               config.compression.codec != "none") {}

std::vector<uint64_t> EncoderCheckpointer::start() {
  if (!enabled_) return {};
  std::error_code ec;
  std::filesystem::create_directories(config_.dir, ec);
  const auto files = list_checkpoint_files(config_.dir, job_id_, "worker", rank_);
  if (!config_.resume) {
    for (const auto& [iteration, path] : files) std::filesystem::remove(path, ec);
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
  const std::string path = checkpoint_file(config_.dir, job_id_, "worker", rank_, iteration);
  Status st = encoder.save_state(w);
  if (st) {
    w.put<uint32_t>(crc32_of(w.out()));
    st = write_durably(path, w.out());
  }
  if (!st) {
    spdlog::error("checkpoint {}: {}; the run carries on without it", path, st.message());
    return;
  }
  keep_newest_checkpoints(list_checkpoint_files(config_.dir, job_id_, "worker", rank_),
                          config_.keep + kExtraKept);
}

Status EncoderCheckpointer::check(const std::string& path, uint64_t iteration,
                                  const std::function<Status(ByteReader&)>& use) const {
  auto bad = [&](const std::string& why) {
    return Status::error("checkpoint " + path + " rejected: " + why);
  };
  auto bytes = read_whole_file(path);
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
  if (const auto v = r.get<uint32_t>(); v != kVersion) {
    return bad("format version " + std::to_string(v) + ", this build reads version " +
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
  if (!use) return Status::ok();
  if (Status st = use(r); !st) return bad(st.message());
  return Status::ok();
}

Status EncoderCheckpointer::restore(uint64_t iteration, GradEncoder& encoder) const {
  const std::string path = checkpoint_file(config_.dir, job_id_, "worker", rank_, iteration);
  return check(path, iteration, [&](ByteReader& r) { return encoder.load_state(r); });
}

}  // namespace psrt
