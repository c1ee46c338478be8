#include "server/checkpointer.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <memory>

#include "core/durable_file.h"

namespace psrt {

namespace {

std::string quoted(const std::string& id) {
  return "'" + (id.size() > 64 ? id.substr(0, 64) + "..." : id) + "'";
}

constexpr const char* kOtherOptimizer =
    ": an optimizer's state does not carry over to another (optimizer.type; "
    "compression.adam_correction runs Adam on the workers and plain SGD on the servers)";

}  // namespace

Checkpointer::Checkpointer(const Config& config, uint32_t rank, std::function<void()> failed)
    : config_(config.checkpoint),
      job_id_(config.job.id),
      rank_(rank),
      servers_(uint32_t(config.cluster.servers)),
      workers_(uint32_t(config.cluster.workers)),
      optimizer_(config.optimizer.type),
      last_(Clock::now()),
      writer_(config_.dir, job_id_, rank, config_.keep, std::move(failed),
              uint64_t(std::max<int64_t>(config_.every, 0))) {}

void Checkpointer::fresh_start() {
  const std::string said =
      remove_earlier_run(stale_, "server " + std::to_string(rank_), config_.dir);
  if (!said.empty()) spdlog::info("{}", said);
}

void Checkpointer::remove_unfinished() {
  if (!enabled()) return;
  if (const auto n = remove_unfinished_checkpoints(config_.dir, job_id_, "server", rank_))
    spdlog::info("removed {} unfinished checkpoint write(s) of server {} from {}", n, rank_,
                 config_.dir);
}

std::vector<uint64_t> Checkpointer::start() {
  if (!enabled()) return {};
  std::error_code ec = make_folder(config_.dir);
  if (ec || !std::filesystem::is_directory(config_.dir)) {
    throw ConfigError("checkpoint.dir: cannot create the folder '" + config_.dir +
                      "': " + ec.message());
  }
  // A folder the server cannot write in (read-only, another user's) lost every checkpoint of
  // the run, each with an error line only: refused now.
  const std::string probe = checkpoint_path(config_.dir, job_id_, rank_, 0) + ".probe";
  if (Status st = write_durably(probe, std::span<const uint8_t>()); !st) {
    throw ConfigError("checkpoint.dir: cannot write in '" + config_.dir + "': " + st.message());
  }
  std::filesystem::remove(probe, ec);
  const auto files = list_checkpoints(config_.dir, job_id_, rank_);
  if (!config_.resume) {
    stale_ = files;
    return {};
  }
  std::vector<uint64_t> usable;
  std::string first_error;
  for (const auto& [iteration, path] : files) {
    auto s = read_checkpoint(path);
    Status st = s ? check_identity(*s, path) : s.status();
    if (st && s->iteration != iteration) {
      st = Status::error("checkpoint " + path + " rejected: it holds iteration " +
                         std::to_string(s->iteration));
    }
    if (!st) {
      spdlog::warn("{}", st.message());
      if (first_error.empty()) first_error = st.message();
      continue;
    }
    usable.push_back(iteration);
  }
  if (files.empty()) {
    // A server that holds no chunk writes none; server 0 refuses the resume if it holds one.
    spdlog::warn("--resume: no checkpoint of server {} in {}", rank_, config_.dir);
    return usable;
  }
  if (usable.empty()) {
    throw ConfigError("--resume: no usable checkpoint of server " + std::to_string(rank_) + " in " +
                      config_.dir + (first_error.empty() ? std::string() : ": " + first_error));
  }
  spdlog::info("checkpoints of server {} in {}: iterations {} to {} ({} usable)", rank_,
               config_.dir, usable.front(), usable.back(), usable.size());
  return usable;
}

Status Checkpointer::check_identity(const ShardSnapshot& s, const std::string& path) const {
  if (!s.optimizer.empty() && s.optimizer != optimizer_) {
    return Status::error("checkpoint " + path + " rejected: its servers ran optimizer '" +
                         s.optimizer + "', this job's run '" + optimizer_ + "'" + kOtherOptimizer);
  }
  if (s.job_id == job_id_ && s.rank == rank_ && s.servers == servers_ && s.workers == workers_) {
    return Status::ok();
  }
  return Status::error("checkpoint " + path + " rejected: written by job " + quoted(s.job_id) +
                       ", server " + std::to_string(s.rank) + " of " + std::to_string(s.servers) +
                       " servers and " + std::to_string(s.workers) + " workers; this is job " +
                       quoted(job_id_) + ", server " + std::to_string(rank_) + " of " +
                       std::to_string(servers_) + " and " + std::to_string(workers_));
}

void Checkpointer::summarize() {
  if (!enabled()) return;
  writer_.drain();
  if (writer_.failed() == 0) return;
  spdlog::error("{} of {} checkpoints could not be written (the lines above say why); --resume "
                "goes back to the newest one every server wrote (every process kept all its "
                "checkpoints from the first failure on)",
                writer_.failed(), writer_.failed() + writer_.written());
}

bool Checkpointer::wanted(uint64_t iteration) {
  if (auto it = wanted_.find(iteration); it != wanted_.end()) return it->second;
  // The first chunk to reach an iteration decides for all of them.
  bool yes = config_.every > 0 && iteration % uint64_t(config_.every) == 0;
  const auto now = Clock::now();
  if (config_.every_s > 0 && now - last_ >= std::chrono::duration<double>(config_.every_s))
    yes = true;
  if (yes) last_ = now;
  wanted_[iteration] = yes;
  // A server's chunks are never more than one iteration apart.
  while (wanted_.begin()->first + 4 < iteration) wanted_.erase(wanted_.begin());
  return yes;
}

void Checkpointer::on_update(const ChunkState& c, const ChunkTable& table) {
  if (!enabled() || c.iteration == 0 || !wanted(c.iteration)) return;
  Pending& p = pending_[c.iteration];
  if (p.snapshot.chunks.empty()) {
    p.snapshot = {job_id_, rank_, servers_, workers_, c.iteration, {}, optimizer_};
    p.snapshot.chunks.resize(table.size());
  }
  p.snapshot.chunks.at(c.index) = {c.desc.key, c.desc.offset, c.desc.length, c.iteration,
                                   *c.params,  c.opt,         c.published};
  if (++p.copied < table.size()) return;
  const uint64_t iteration = c.iteration;
  writer_.submit(checkpoint_path(config_.dir, job_id_, rank_, iteration), std::move(p.snapshot));
  pending_.erase(iteration);
}

Status Checkpointer::restore(ChunkTable& table, uint64_t iteration) {
  const std::string path = checkpoint_path(config_.dir, job_id_, rank_, iteration);
  auto s = read_checkpoint(path);
  if (!s) return s.status();
  PSRT_RETURN_IF_ERROR(check_identity(*s, path));
  auto bad = [&](const std::string& why) {
    return Status::error("checkpoint " + path + " rejected: " + why);
  };
  if (s->iteration != iteration) return bad("it holds iteration " + std::to_string(s->iteration));
  if (s->chunks.size() != table.size()) {
    return bad("it holds " + std::to_string(s->chunks.size()) + " chunks, this server's share of " +
               "the model has " + std::to_string(table.size()) +
               " (another model, scheduler.mode or scheduler.chunk_bytes? They lay the model "
               "out in chunks: resume with the run's own)");
  }
  for (uint32_t i = 0; i < table.size(); ++i) {
    ChunkSnapshot& k = s->chunks[i];
    ChunkState& c = table.at(i);
    const auto sized = [&](const std::vector<float>& v) {
      return v.empty() || v.size() == c.desc.length;
    };
    // A version-1 file does not name its optimizer: its state's shape must fit this one's.
    const bool adam_state = !k.opt.v.empty();
    if (adam_state != (optimizer_ == "adam") && (adam_state || !k.opt.m.empty())) {
      return bad("chunk " + std::to_string(i) + " holds " +
                 (adam_state ? "Adam's moments" : "SGD's momentum") +
                 ", this job's servers run optimizer '" + optimizer_ + "'" + kOtherOptimizer);
    }
    if (k.key != c.desc.key || k.offset != c.desc.offset || k.length != c.desc.length ||
        k.iteration != iteration || !sized(k.opt.m) || !sized(k.opt.v) || !sized(k.published)) {
      return bad("chunk " + std::to_string(i) + " is (" + std::to_string(k.key) + ", " +
                 std::to_string(k.offset) + ", " + std::to_string(k.length) + ") there, (" +
                 std::to_string(c.desc.key) + ", " + std::to_string(c.desc.offset) + ", " +
                 std::to_string(c.desc.length) +
                 ") in this job (key, offset, length: another model, or scheduler.chunk_bytes?)");
    }
  }
  for (uint32_t i = 0; i < table.size(); ++i) {
    ChunkSnapshot& k = s->chunks[i];
    ChunkState& c = table.at(i);
    c.params = std::make_shared<std::vector<float>>(std::move(k.params));
    c.opt = std::move(k.opt);
    c.published = std::move(k.published);
    c.iteration = iteration;
    c.initialized = true;
  }
  writer_.drain();  // nothing of this run is written yet; the removal below must come last
  // Later checkpoints belong to the run being replaced; this run writes its own.
  std::error_code ec;
  for (const auto& [it, later] : list_checkpoints(config_.dir, job_id_, rank_)) {
    if (it > iteration) std::filesystem::remove(later, ec);
  }
  last_ = Clock::now();
  spdlog::info("resumed from {} (iteration {})", path, iteration);
  return Status::ok();
}

}  // namespace psrt
