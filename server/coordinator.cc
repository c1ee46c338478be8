#include "server/coordinator.h"

#include "core/model.h"
#include "core/shared_settings.h"
#include "core/sharding.h"
#include "core/wire.h"
#include "core/wire_grouping.h"
#include "scheduler/schedule_policy.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

namespace psrt {

std::string describe(PeerId peer) { return peer_name(peer.role, peer.rank); }

Coordinator::Coordinator(int servers, int workers, const SchedulerConfig& scheduler,
                         const RegisterLimits& limits)
    : servers_(servers), workers_(workers), scheduler_(scheduler), limits_(limits) {}

Status Coordinator::on_register(PeerId peer, const wire::Register& reg, Clock::time_point now) {
  auto err = on_register(peer, routing_id(peer.role, peer.rank), reg, now);
  return err ? Status::error(err->message) : Status::ok();
}

std::optional<WireError> Coordinator::on_register(PeerId peer, const std::string& identity,
                                                  const wire::Register& reg,
                                                  Clock::time_point now,
                                                  const wire::StageInfo* stage) {
  auto refuse = [](ErrorCode code, std::string why) {
    return std::optional<WireError>(WireError{code, std::move(why)});
  };
  const int limit = peer.role == wire::SERVER ? servers_ : peer.role == wire::WORKER ? workers_ : 0;
  if (int64_t(peer.rank) >= limit) {
    return refuse(ErrorCode::kNotRegistered,
                  describe(peer) + " is not part of this job (" + std::to_string(servers_) +
                      " servers, " + std::to_string(workers_) + " workers)");
  }
  if (auto it = identities_.find(peer); it != identities_.end()) {
    if (it->second == identity) return std::nullopt;  // a repeat
    return refuse(ErrorCode::kTaken, describe(peer) +
                                         " is already registered by another process: check "
                                         "that no two processes were started with this rank");
  }
  if (membership_)
    return refuse(ErrorCode::kNotRegistered, "registration after the membership was sent");
  if (reg.address().size() > limits_.max_string) {
    return refuse(ErrorCode::kLimit, "address of " + std::to_string(reg.address().size()) +
                                         " bytes; at most " + std::to_string(limits_.max_string));
  }
  if (peer.role == wire::SERVER && reg.address().rfind(limits_.transport, 0) != 0) {
    return refuse(ErrorCode::kNotRegistered,
                  describe(peer) + " registered without a " + limits_.transport + " address");
  }
  if (auto err = check_settings(peer, reg)) return err;
  if (peer.role == wire::WORKER) {
    if (auto err = check_worker(peer, reg)) return err;
    if (auto err = check_stage(peer, reg, stage)) return err;
    if (stage) stages_[peer.rank] = *stage;
  }
  registrations_[peer] = reg;
  identities_[peer] = identity;
  last_seen_[peer] = now;
  return std::nullopt;
}

std::optional<WireError> Coordinator::check_settings(PeerId peer,
                                                     const wire::Register& reg) const {
  auto refuse = [](ErrorCode code, std::string why) {
    return std::optional<WireError>(WireError{code, std::move(why)});
  };
  std::size_t bytes = 0;
  for (const auto& line : reg.settings()) bytes += line.size();
  if (reg.settings_size() > kMaxSettings || bytes > kMaxSettings * limits_.max_string) {
    return refuse(ErrorCode::kLimit, describe(peer) + " registered " +
                                         std::to_string(reg.settings_size()) + " settings of " +
                                         std::to_string(bytes) + " bytes");
  }
  const std::vector<std::string> mine(reg.settings().begin(), reg.settings().end());
  for (const auto& [other, r] : registrations_) {
    if (r.settings_size() == 0) continue;
    const std::string diff = settings_difference({r.settings().begin(), r.settings().end()},
                                                 describe(other), mine, describe(peer));
    if (!diff.empty()) {
      return refuse(ErrorCode::kInconsistent,
                    printable(diff, 512) + ": every process of a job must run its settings "
                                           "alike (their job files or --set differ)");
    }
    break;  // the first that said them: all before agreed with it
  }
  return std::nullopt;
}

std::optional<WireError> Coordinator::check_worker(PeerId peer, const wire::Register& reg) const {
  auto refuse = [](ErrorCode code, std::string why) {
    return std::optional<WireError>(WireError{code, std::move(why)});
  };
  if (reg.tensors_size() == 0)
    return refuse(ErrorCode::kNotRegistered, describe(peer) + " registered no tensors");
  if (reg.tensors_size() > kMaxTensors) {
    return refuse(ErrorCode::kLimit, describe(peer) + " registered " +
                                         std::to_string(reg.tensors_size()) + " tensors; at most " +
                                         std::to_string(kMaxTensors));
  }
  if (reg.has_grouping()) {
    if (const auto e = grouping_plan_error(reg.grouping(), uint32_t(reg.tensors_size()))) {
      return refuse(ErrorCode::kMalformed,
                    describe(peer) + " sent an unusable grouping plan: " + *e);
    }
  }
  uint64_t total = 0, largest = 0;
  for (int i = 0; i < reg.tensors_size(); ++i) {
    const auto& t = reg.tensors(i);
    if (t.key() != uint32_t(i)) {
      return refuse(ErrorCode::kNotRegistered,
                    describe(peer) + ": tensor " + std::to_string(i) + " has key " +
                        std::to_string(t.key()) + "; keys must be 0, 1, 2, ... in order");
    }
    if (t.num_elements() == 0 || t.num_elements() > kMaxModelElements) {
      return refuse(ErrorCode::kLimit, describe(peer) + ": tensor " + std::to_string(i) + " has " +
                                           std::to_string(t.num_elements()) +
                                           " elements, allowed 1 to " +
                                           std::to_string(kMaxModelElements));
    }
    if (t.name().size() > limits_.max_string) {
      return refuse(ErrorCode::kLimit, describe(peer) + ": tensor " + std::to_string(i) +
                                           " has a name of " + std::to_string(t.name().size()) +
                                           " bytes; at most " + std::to_string(limits_.max_string));
    }
    total += t.num_elements();
    largest = std::max<uint64_t>(largest, t.num_elements());
  }
  // The shard map spreads bytes evenly: a server holds about total / servers, plus a chunk (the
  // mode's unit, never more than the largest tensor).
  const double unit = double(SchedulePolicy(scheduler_.mode).unit_bytes(scheduler_.chunk_bytes));
  const double per_server = (double(total) / servers_ + std::min(unit / 4, double(largest))) *
                            limits_.bytes_per_element;
  if (limits_.server_bytes > 0 && per_server > double(limits_.server_bytes)) {
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  "the model of %llu elements needs about %.1f MiB on each of %d servers, over "
                  "the cap of %.1f MiB",
                  (unsigned long long)total, per_server / (1 << 20), servers_,
                  double(limits_.server_bytes) / (1 << 20));
    return refuse(ErrorCode::kLimit, describe(peer) + ": " + buf +
                                         " (limits.server_memory_bytes, or 80% of the memory "
                                         "available to server 0)");
  }
  for (const auto& [other, r] : registrations_) {
    if (other.role != wire::WORKER) continue;
    bool same = r.tensors_size() == reg.tensors_size();
    for (int i = 0; same && i < reg.tensors_size(); ++i) {
      same = r.tensors(i).num_elements() == reg.tensors(i).num_elements() &&
             r.tensors(i).key() == reg.tensors(i).key();
    }
    if (!same) {
      return refuse(ErrorCode::kInconsistent,
                    describe(peer) + " trains a different model than " + describe(other) +
                        " (tensor lists differ): check that every worker has the same config");
    }
    if (r.iterations() > 0 && reg.iterations() > 0 && r.iterations() != reg.iterations()) {
      return refuse(ErrorCode::kInconsistent,
                    describe(peer) + " would run " + std::to_string(reg.iterations()) +
                        " iterations, " + describe(other) + " " +
                        std::to_string(r.iterations()) +
                        ": their job.iterations differ, or with job.epochs each worker counts "
                        "passes over its own training set, and theirs differ in size (data.path, "
                        "data.train_limit on each host); give every worker the same data, or set "
                        "job.iterations alike");
    }
    break;
  }
  return std::nullopt;
}

std::optional<WireError> Coordinator::check_stage(PeerId peer, const wire::Register& reg,
                                                  const wire::StageInfo* stage) const {
  auto refuse = [&](std::string why) {
    return std::optional<WireError>(
        WireError{ErrorCode::kNotRegistered, describe(peer) + " " + why});
  };
  const bool others = std::any_of(registrations_.begin(), registrations_.end(),
                                  [](const auto& r) { return r.first.role == wire::WORKER; });
  if (others && (stage != nullptr) != !stages_.empty()) {
    return refuse(stage ? "runs a pipeline stage, the workers before it whole replicas"
                        : "runs a whole replica, the workers before it pipeline stages");
  }
  if (!stage) return std::nullopt;
  if (stage->stages() < 1 || stage->stage() >= stage->stages() ||
      (!stages_.empty() && stages_.begin()->second.stages() != stage->stages())) {
    return refuse("registered stage " + std::to_string(stage->stage()) + " of " +
                  std::to_string(stage->stages()) + ": check that every worker has the same "
                  "placement section");
  }
  if (stage->address().size() > limits_.max_string) return refuse("sent a stage address too long");
  for (int i = 0; i < stage->keys_size(); ++i) {
    if (int64_t(stage->keys(i)) >= reg.tensors_size() ||
        (i > 0 && stage->keys(i) <= stage->keys(i - 1))) {
      return refuse("holds tensor keys that are not ascending keys of its model");
    }
  }
  return std::nullopt;
}

bool Coordinator::holds(PeerId peer, const std::string& identity) const {
  auto it = identities_.find(peer);
  return it != identities_.end() && it->second == identity;
}

bool Coordinator::all_registered() const {
  // server 0 registers itself too.
  return registrations_.size() == static_cast<std::size_t>(servers_ + workers_);
}

const wire::Membership& Coordinator::membership() {
  if (membership_) return *membership_;
  wire::Membership m;
  m.set_num_servers(uint32_t(servers_));
  m.set_num_workers(uint32_t(workers_));
  for (int s = 0; s < servers_; ++s) {
    m.add_server_addresses(registrations_.at({wire::SERVER, uint32_t(s)}).address());
  }
  for (int w = 0; w < workers_; ++w)
    m.add_worker_identities(identities_.at({wire::WORKER, uint32_t(w)}));
  const wire::Register& w0 = registrations_.at({wire::WORKER, 0});
  if (w0.has_grouping()) *m.mutable_grouping() = w0.grouping();
  ModelDesc model;
  for (const auto& t : w0.tensors()) {
    *m.add_tensors() = t;
    TensorDesc d;
    d.key = t.key();
    d.name = t.name();
    d.num_elements = t.num_elements();
    d.layer = t.layer();
    model.tensors.push_back(d);
  }
  const ShardMap map(model, uint32_t(servers_),
                     SchedulePolicy(scheduler_.mode).unit_bytes(scheduler_.chunk_bytes));
  for (const auto& c : map.chunks()) {
    auto* ci = m.add_chunks();
    ci->set_key(c.key);
    ci->set_offset(c.offset);
    ci->set_length(c.length);
    ci->set_server(c.server);
  }
  set_resume_point(m);
  if (!stages_.empty()) {
    for (int w = 0; w < workers_; ++w) {
      wire::StageInfo* info = stage_map_.add_workers();
      *info = stages_.at(uint32_t(w));
      info->set_identity(identities_.at({wire::WORKER, uint32_t(w)}));
    }
  }
  membership_ = std::move(m);
  return *membership_;
}

void Coordinator::refresh(Clock::time_point now) {
  for (auto& [peer, t] : last_seen_) t = now;
}

namespace {

// "3 checkpoint(s) up to iteration 300", or "0 checkpoint(s)".
std::string checkpoints_held(const wire::Register& r) {
  std::string out = std::to_string(r.checkpoints_size()) + " checkpoint(s)";
  if (r.checkpoints_size() > 0) {
    out += " up to iteration " +
           std::to_string(*std::max_element(r.checkpoints().begin(), r.checkpoints().end()));
  }
  return out;
}

}  // namespace

void Coordinator::set_resume_point(wire::Membership& m) {
  const wire::Register& self_reg = registrations_.at(self());
  // Every server that holds a chunk (one that holds none writes no checkpoint and restores
  // nothing) must have the resume point; the workers that checkpoint their compression state
  // should, for a bit-identical run.
  std::set<uint32_t> holders;
  for (const auto& c : m.chunks()) holders.insert(c.server());
  std::optional<std::set<uint64_t>> common;
  std::vector<PeerId> codec_workers;
  std::string have;
  for (const auto& [peer, r] : registrations_) {
    // Workers too: one started fresh beside resuming servers lost its codec state, one that
    // resumes beside fresh servers was ignored.
    if (r.resume() != self_reg.resume()) {
      throw std::runtime_error(describe(peer) + " was started " +
                               (r.resume() ? "with" : "without") + " --resume, server 0 " +
                               (self_reg.resume() ? "with" : "without") +
                               " it: start every process of the job alike");
    }
    if (peer.role == wire::WORKER && r.codec_state()) codec_workers.push_back(peer);
    if (peer.role != wire::SERVER || holders.count(peer.rank) == 0) continue;
    std::set<uint64_t> both;
    for (uint64_t it : r.checkpoints())
      if (!common || common->count(it)) both.insert(it);
    common = std::move(both);
    have += (have.empty() ? "" : "; ") + describe(peer) + ": " + checkpoints_held(r);
  }
  if (!self_reg.resume()) return;
  if (!common || common->empty()) {
    throw std::runtime_error(
        "cannot resume: no checkpoint iteration is common to every server "
        "holding a chunk: " +
        have);
  }
  // A worker's codec state of another iteration (a corrupt newest file, writes that failed, files
  // of an earlier run) held the job back to the newest point every process had, however old, or
  // refused it. It may now hold it back by one of the servers' checkpoints, which keeps the run
  // bit for bit; further back, the servers' newest is taken and that worker's state restarts
  // empty (it says so too).
  const auto has = [&](const PeerId& w, uint64_t it) {
    const auto& cps = registrations_.at(w).checkpoints();
    return std::find(cps.begin(), cps.end(), it) != cps.end();
  };
  const auto all_have = [&](uint64_t it) {
    return std::all_of(codec_workers.begin(), codec_workers.end(),
                       [&](const PeerId& w) { return has(w, it); });
  };
  uint64_t at = *common->rbegin();
  if (!all_have(at) && common->size() > 1 && all_have(*std::next(common->rbegin()))) {
    at = *std::next(common->rbegin());
  }
  m.set_resume(true);
  m.set_resume_iteration(at);
  for (const PeerId& w : codec_workers) {
    if (has(w, at)) continue;
    notes_.push_back("resuming from iteration " + std::to_string(at) +
                     ", the newest every server has; " + describe(w) +
                     " has no compression state of it (" + checkpoints_held(registrations_.at(w)) +
                     "): its state restarts empty, so the run will not match an uninterrupted "
                     "one bit for bit");
  }
}

void Coordinator::seen(PeerId peer, Clock::time_point now) {
  auto it = last_seen_.find(peer);
  if (it != last_seen_.end()) it->second = now;
}

std::optional<PeerId> Coordinator::lost(Clock::time_point now, Clock::duration timeout) const {
  for (const auto& [peer, t] : last_seen_) {
    if (peer == self()) continue;
    if (now - t > timeout) return peer;
  }
  return std::nullopt;
}

double Coordinator::silent_seconds(PeerId peer, Clock::time_point now) const {
  auto it = last_seen_.find(peer);
  if (it == last_seen_.end()) return 0;
  return std::chrono::duration<double>(now - it->second).count();
}

std::vector<PeerId> Coordinator::expected(const std::string& barrier) const {
  std::vector<PeerId> out;
  if (barrier != "shutdown") {
    for (int s = 0; s < servers_; ++s) out.push_back({wire::SERVER, uint32_t(s)});
  }
  if (barrier == "membership") return out;
  for (int w = 0; w < workers_; ++w) out.push_back({wire::WORKER, uint32_t(w)});
  return out;
}

bool Coordinator::arrive(const std::string& barrier, PeerId peer) {
  auto& arrived = barriers_[barrier];
  arrived.insert(peer);
  for (const auto& p : expected(barrier))
    if (!arrived.count(p)) return false;
  return true;
}

std::string Coordinator::missing(const std::string& barrier) const {
  std::string out;
  auto it = barriers_.find(barrier);
  for (const auto& p : expected(barrier)) {
    const bool there = barrier.empty() ? registrations_.count(p) > 0
                                       : (it != barriers_.end() && it->second.count(p) > 0);
    if (!there) out += (out.empty() ? "" : ", ") + describe(p);
  }
  return out;
}

std::vector<PeerId> Coordinator::registered_peers() const {
  std::vector<PeerId> out;
  for (const auto& [peer, r] : registrations_)
    if (!(peer == self())) out.push_back(peer);
  return out;
}

}  // namespace psrt
