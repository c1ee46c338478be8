// PsClient, I/O-thread side: failing the job, the timers (heartbeats, start and peer timeouts) and
// the progress watchdog.
#include <spdlog/spdlog.h>

#include <cstdio>

#include "core/endpoints.h"
#include "worker/ps_client.h"

namespace psrt {

namespace {
using SteadyClock = std::chrono::steady_clock;
SteadyClock::duration seconds(double s) {
  return std::chrono::duration_cast<SteadyClock::duration>(std::chrono::duration<double>(s));
}
}  // namespace

void PsClient::fail(const std::string& why) {
  std::lock_guard lock(mu_);
  if (!error_) error_ = why;
  cv_.notify_all();
  lent_.abandon();
}

void PsClient::refused(const std::string& why) {
  std::lock_guard lock(mu_);
  if (!error_) {
    error_ = why;
    refused_ = true;
  }
  cv_.notify_all();
  lent_.abandon();
}

bool PsClient::failed() const {
  std::lock_guard lock(mu_);
  return error_.has_value();
}

bool PsClient::abandon(const std::string& why) {
  std::unique_lock lock(mu_);
  // The job's own failure, known to it, or over: the worker is ending and writes its outputs
  // (timeline, dump_params) first, within the signal's grace. Declined, the signal ended it at
  // once and a Ctrl-C lost those files.
  if (error_ || finished_) return true;
  abandoned_ = why;
  messenger_.wakeup().notify();
  // Until the I/O thread has taken it (report() fails the client), so that the destructor's
  // "worker stopped" cannot end the loop first; bounded, should the loop be stuck.
  cv_.wait_for(lock, std::chrono::seconds(2), [&] { return error_.has_value(); });
  return true;
}

void PsClient::report(const std::string& why, bool refusal) {
  if (refusal) refused(why);  // first: give_up's failure would make it a JobError
  try {
    control_->give_up(why);  // fails this client too (Events::failed)
  } catch (const std::exception&) {
    // The cause may be the transport itself: this client fails all the same.
  }
  fail(why);
}

ControlPlane::Events PsClient::control_events() {
  ControlPlane::Events e;
  e.membership = [this](const wire::Membership& m, const wire::StageMap& stages) {
    on_membership(m, stages);
  };
  e.released = [this](const std::string& barrier) { on_release(barrier); };
  e.refused = [this](const std::string& why) { refused(why); };
  e.failed = [this](const std::string& why) { fail(why); };
  e.heartbeat = [this](SteadyClock::time_point now) {
    send_heartbeats();
    check_progress(now);
    std::optional<std::string> why = lost_send_;  // core/lost_send.h
    if (!why) why = drops_.due(now);
    if (why && !failed()) {
      std::unique_lock lock(mu_);
      if (finished_) return;  // the job ended meanwhile: the peers went with it
      lock.unlock();
      report(*why);
    }
  };
  e.resumed = [this](SteadyClock::time_point now) {
    // This process did not run (stopped): the coordinator's messages are waiting to be read.
    std::lock_guard lock(mu_);
    if (waiting_since_) waiting_since_ = now;
  };
  e.error = [this](const wire::Header& h) { on_server_error(0, h); };
  e.coordinator_heartbeat = [this](const wire::Header& h) {
    if (h.keep_checkpoints() && encoder_ckpt_.keep_all() && encoder_ckpt_.enabled()) {
      spdlog::warn("a server could not write a checkpoint: this worker keeps all its checkpoints "
                   "from now on (checkpoint.keep suspended)");
    }
  };
  return e;
}

SteadyClock::time_point PsClient::tick(SteadyClock::time_point now) {
  bool started = false, membership = false;
  std::optional<std::string> abandoned;
  {
    std::lock_guard lock(mu_);
    started = started_;
    membership = have_membership_;
    abandoned.swap(abandoned_);
  }
  if (abandoned) {
    report(*abandoned);  // ends the loop: the sockets close, flushing the ABORT
    return now;
  }
  auto next = control_->tick(now, membership, started);
  take_commands();
  if (const auto tick = release_due_groups(now)) next = std::min(next, *tick);
  pump();
  pump_stage(StageDir::kForward);
  pump_stage(StageDir::kBackward);
  flush_reply_acks();
  return next;
}

const ChunkDesc* PsClient::waited_chunk() const {
  if (!waiting_since_ || !waiting_stage_.empty()) return nullptr;
  // The first chunk that has not come, of the layer waited for (or of any layer).
  for (const auto& c : shards_.chunks()) {
    if (!held_[c.key] || version_[c.id] >= int64_t(waiting_iteration_)) continue;
    if (waiting_layer_ >= 0 && model_.tensors[c.key].layer != uint32_t(waiting_layer_)) continue;
    return &c;
  }
  return nullptr;
}

void PsClient::send_heartbeats() {
  wire::Header h = make_header(self_, wire::HEARTBEAT);
  bool membership = false;
  {
    std::lock_guard lock(mu_);
    membership = have_membership_;
    if (const ChunkDesc* c = waited_chunk()) h.set_waits_for_server(c->server + 1);
  }
  // At the start, the server whose answers to the initial values have not come (server 0 names
  // it if the start barrier is never reached: an unreachable server was blamed on worker 0).
  if (h.waits_for_server() == 0 && start_.unanswered() > 0) {
    if (const auto s = start_.waiting_for()) h.set_waits_for_server(uint32_t(*s) + 1);
  }
  // Every server hears it once they are known: one that waits for this worker's push learns
  // that the worker itself waits for another server, and leaves the diagnosis to the worker.
  control_->heartbeat(h.waits_for_server());
  const std::size_t servers = membership ? shards_.num_servers() : 1;
  for (std::size_t s = 1; s < servers; ++s) send_to(s, h);
}

void PsClient::check_progress(SteadyClock::time_point now) {
  // A server that waits for a worker's push reports at the limit; a worker reports a little
  // later, so the process that knows the stalled peer best speaks first (docs/config.md).
  const double limit = config_.cluster.progress_timeout_s;
  if (limit <= 0) return;
  std::string what;
  bool stage = false;
  {
    std::lock_guard lock(mu_);
    const double grace = 2 * config_.cluster.heartbeat_s;
    if (!waiting_since_ || now - *waiting_since_ <= seconds(limit + grace)) return;
    if (!waiting_stage_.empty()) {
      what = waiting_stage_;
      stage = true;
    } else if (const ChunkDesc* c = waited_chunk()) {
      what = "server " + std::to_string(c->server) + " (tensor " + std::to_string(c->key) +
             " offset " + std::to_string(c->offset) + ", iteration " +
             std::to_string(waiting_iteration_) + ")";
    }
  }
  char buf[96];
  std::snprintf(buf, sizeof buf, "no training progress for %.0f s (cluster.progress_timeout_s): ",
                limit);
  report(buf + std::string("worker ") + std::to_string(rank_) +
         (stage ? " waits for " : " waits for parameters from ") +
         (what.empty() ? std::string("the servers") : what));
}

}  // namespace psrt
