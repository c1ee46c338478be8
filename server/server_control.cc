// The control plane of psrt-server: registration, membership, barriers, heartbeats, abort.
#include <spdlog/spdlog.h>

#include "core/config_limits.h"
#include "core/status.h"
#include "server/server.h"

namespace psrt {

void Server::on_control(const std::string& identity, PeerId from, const wire::Header& h) {
  if (h.type() == wire::HEARTBEAT) {
    note_heartbeat(from, h);  // `seen` was recorded by the caller
    if (coordinator_ && from.role == wire::SERVER && h.keep_checkpoints()) {
      keep_checkpoints(describe(from));
    }
    return;
  }
  if (!coordinator_) {
    reply_error(identity, &h, {ErrorCode::kUnexpected,
                               std::string(wire::MsgType_Name(h.type())) +
                                   " goes to the coordinator (server 0), not server " +
                                   std::to_string(rank_)});
    return;
  }
  const auto now = Clock::now();
  switch (h.type()) {
    case wire::REGISTER: {
      const bool was_complete = coordinator_->all_registered();
      if (auto err = coordinator_->on_register(from, identity, h.register_(), now,
                                                   h.has_stage() ? &h.stage() : nullptr)) {
        reply_error(identity, &h, *err);
        // The refused worker stops; the rest could only wait out cluster.start_timeout_s and
        // then blame it for not coming. The job ends now, with the reason.
        if (err->code == ErrorCode::kInconsistent) {
          told_.insert(from);  // the refusal told it
          abort_job(err->message);
        }
        return;
      }
      if (was_complete) return;  // a repeat
      spdlog::info(
          "{} registered{}", describe(from),
          h.register_().address().empty() ? "" : " at " + printable(h.register_().address(), 256));
      if (coordinator_->all_registered()) {
        wire::Header out = make_header(self_, wire::MEMBERSHIP);
        try {
          *out.mutable_membership() = coordinator_->membership();
          *out.mutable_stage_map() = coordinator_->stage_map();
          for (const std::string& note : coordinator_->notes()) spdlog::warn("{}", note);
        } catch (const std::exception& e) {
          refuse_job(std::string("cannot build the membership: ") + e.what());
        }
        // Sent, it would be dropped by each peer's socket, and the job would wait for nothing.
        const wire::Membership& m = out.membership();
        if (const std::string why = oversize_header(
                out, std::to_string(m.tensors_size()) + " tensors in " +
                         std::to_string(m.chunks_size()) + " chunks");
            !why.empty()) {
          refuse_job("model: " + why + ": a model of fewer tensors (merge small ones)");
        }
        // Servers first: a worker may send a chunk to a server the moment it knows the
        // membership, so the workers get it once every server holds its chunk table.
        broadcast(out, wire::SERVER);
        on_membership(out.membership(), out.stage_map());
      }
      return;
    }
    case wire::ABORT:  // a process that gives up tells why, and the job ends with its reason
    {
      const bool registered = coordinator_->is_registered(from);
      if (!registered) told_.insert(from);  // it needs no telling
      abort_job(describe(from) + (registered ? " gave up: " : " gave up before registering: ") +
                printable(h.error().message(), std::size_t(config_.limits.max_string_bytes)));
    }
    case wire::BARRIER: {
      const std::string& name = h.barrier().name();
      if (name != "start" && name != "shutdown" && name != "membership") {
        reply_error(identity, &h,
                    {ErrorCode::kMalformed, "unknown barrier '" + printable(name) + "'"});
        return;
      }
      if (coordinator_->arrive(name, from)) release(name);
      return;
    }
    default:
      reply_error(identity, &h, {ErrorCode::kUnexpected,
                                 std::string(wire::MsgType_Name(h.type())) +
                                     " is not a request the coordinator takes"});
  }
}

ControlPlane::Events Server::member_events() {
  ControlPlane::Events e;
  e.membership = [this](const wire::Membership& m, const wire::StageMap& stages) {
    on_membership(m, stages);
  };
  e.released = [this](const std::string& barrier) { release(barrier); };
  e.refused = [](const std::string& why) { throw ConfigError(why); };
  e.failed = [](const std::string& why) { throw JobError(why); };
  e.heartbeat = [this](Clock::time_point now) {
    control_->heartbeat(0, keep_told_);  // told at once, and again should that one be dropped
    check_progress(now);
  };
  e.resumed = [this](Clock::time_point now) { last_progress_ = now; };
  e.coordinator_heartbeat = [this](const wire::Header& h) {
    if (h.keep_checkpoints()) on_keep_checkpoints();
  };
  return e;
}

void Server::on_membership(const wire::Membership& m, const wire::StageMap& stages) {
  if (have_membership_) return;
  if (int64_t(m.num_servers()) != config_.cluster.servers ||
      int64_t(m.num_workers()) != config_.cluster.workers) {
    abort_job("membership says " + std::to_string(m.num_servers()) + " servers and " +
              std::to_string(m.num_workers()) + " workers, this server's config says " +
              std::to_string(config_.cluster.servers) + " and " +
              std::to_string(config_.cluster.workers));
  }
  if (m.worker_identities_size() != int(m.num_workers())) {
    abort_job("the membership names " + std::to_string(m.worker_identities_size()) +
              " worker identities for " + std::to_string(m.num_workers()) + " workers");
  }
  worker_ids_.assign(m.worker_identities().begin(), m.worker_identities().end());
  double elements = 0;
  for (const auto& c : m.chunks()) elements += c.server() == rank_ ? double(c.length()) : 0;
  if (const uint64_t cap = server_memory_cap(config_.limits);
      cap > 0 && elements * bytes_per_element() > double(cap)) {
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  "its share of the model needs %.1f MiB, over the cap of %.1f MiB",
                  elements * bytes_per_element() / (1 << 20), double(cap) / (1 << 20));
    abort_job("server " + std::to_string(rank_) + ": " + buf +
              " (limits.server_memory_bytes, or 80% of the memory available)");
  }
  try {
    chunks_ = ChunkTable(rank_, m.num_workers(), m, stages);
  } catch (const std::bad_alloc&) {
    abort_job("server " + std::to_string(rank_) + " has not enough memory for its " +
              "share of the model");
  }
  if (chunks_.size() == 0) {
    // It writes no checkpoint and restores none: the resume point leaves it out.
    spdlog::warn("this server holds no chunk of the model ({} servers for {} tensors): it has "
                 "nothing to do in this job; fewer servers (cluster.servers) would do",
                 m.num_servers(), m.tensors_size());
  }
  if (!m.resume()) checkpointer_.fresh_start();
  checkpointer_.remove_unfinished();
  if (m.resume()) {
    if (Status st = chunks_.size() == 0 ? Status::ok()
                                        : checkpointer_.restore(chunks_, m.resume_iteration());
        !st)
      refuse_job(st.message());
    resumed_ = true;
    for (uint32_t i = 0; i < chunks_.size(); ++i) {
      // Dense replies keep no published values: kept from a compressed-replies run, they were
      // checkpointed again unchanged, and a later compressed run restarted the workers from them.
      if (reply_codec_)
        publish_restored(chunks_.at(i));
      else
        std::vector<float>().swap(chunks_.at(i).published);
    }
  }
  replies_.clear();
  for (uint32_t w = 0; w < m.num_workers(); ++w) {
    replies_.emplace_back(PushQueue(SchedulePolicy::replies(), config_.scheduler.credit_bytes));
  }
  have_membership_ = true;
  arrive("membership");
  spdlog::info(
      "membership: {} servers, {} workers, {} tensors; this server holds {} chunks, {:.1f} MiB",
      m.num_servers(), m.num_workers(), m.tensors_size(), chunks_.size(),
      double(chunks_.bytes()) / (1 << 20));
  arrive("start");
}

void Server::arrive(const std::string& barrier) {
  if (coordinator_) {
    if (coordinator_->arrive(barrier, Coordinator::self())) release(barrier);
    return;
  }
  control_->arrive(barrier);
}

void Server::release(const std::string& barrier) {
  if (barrier == "membership") {
    if (!coordinator_) return;
    wire::Header h = make_header(self_, wire::MEMBERSHIP);
    *h.mutable_membership() = coordinator_->membership();
    h.mutable_membership()->clear_worker_identities();  // the servers' business only
    *h.mutable_stage_map() = coordinator_->stage_map();
    broadcast(h, wire::WORKER);
    return;
  }
  if (coordinator_) {
    wire::Header h = make_header(self_, wire::BARRIER_RELEASE);
    h.mutable_barrier()->set_name(barrier);
    broadcast(h);
  }
  if (barrier == "start") {
    started_ = true;
    spdlog::info("start barrier passed");
  } else if (barrier == "shutdown") {
    done_ = true;
  }
}

void Server::broadcast(const wire::Header& h, wire::Role only) {
  for (const auto& peer : coordinator_->registered_peers()) {
    if (only == wire::ROLE_UNSPECIFIED || peer.role == only) send(coordinator_->identity(peer), h);
  }
}

void Server::note_heartbeat(PeerId from, const wire::Header& h) {
  if (from.role != wire::WORKER || int64_t(from.rank) >= config_.cluster.workers) return;
  if (worker_waits_.size() <= from.rank) worker_waits_.resize(std::size_t(config_.cluster.workers));
  // A server rank outside the job is no claim the watchdog can act on.
  const uint32_t waits = h.waits_for_server() <= uint32_t(config_.cluster.servers)
                             ? h.waits_for_server() : 0;
  worker_waits_[from.rank] = {waits, Clock::now()};
}

std::string Server::start_waits() {
  const wire::Membership& m = coordinator_->membership();
  const auto recent = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(3 * config_.cluster.heartbeat_s));
  const auto now = Clock::now();
  std::string out;
  for (std::size_t w = 0; w < worker_waits_.size(); ++w) {
    const WorkerWait& wait = worker_waits_[w];
    const uint32_t s = wait.server_plus_one;
    if (s == 0 || now - wait.at > recent) continue;
    const std::string address = int(s - 1) < m.server_addresses_size()
                                    ? printable(m.server_addresses(int(s - 1)), 256)
                                    : "";
    out += (out.empty() ? " (" : "; ") + peer_name(wire::WORKER, uint32_t(w)) +
           " waits for server " + std::to_string(s - 1) +
           (address.empty() ? "" : " at " + address) + " to answer its initial values";
  }
  if (out.empty()) return "";
  return out +
         ": can those workers reach that address? A firewall, or a cluster.advertise_host "
         "other hosts cannot reach, keeps them from connecting)";
}

void Server::abort_job(const std::string& why) {
  if (control_) control_->give_up(why);  // throws, through ControlPlane::Events::failed
  wire::Header h = make_header(self_, wire::ABORT);
  h.mutable_error()->set_message(why);
  broadcast(h);
  throw JobError(why);
}

void Server::refuse_job(const std::string& why) {
  try {
    abort_job(why);
  } catch (const JobError&) {
    throw ConfigError(why);
  }
}

}  // namespace psrt
