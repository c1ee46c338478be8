#include "server/server.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "compress/job_config.h"
#include "compress/registry.h"
#include "core/endpoints.h"
#include "core/config_limits.h"
#include "core/status.h"

namespace psrt {

namespace {
Clock::duration seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

std::optional<CurveKeys> curve_keys(const Config& config) {
  if (!config.security.curve) return std::nullopt;
  return load_curve_keys(config.security);
}

std::optional<ZapHandler> zap_handler(zmq::context_t& ctx, const std::optional<CurveKeys>& keys) {
  if (!keys) return std::nullopt;
  return ZapHandler(ctx, *keys);
}
}  // namespace

Server::Server(const Config& config, uint32_t rank)
    : config_(config),
      rank_(rank),
      self_{wire::SERVER, rank, config.job.id},
      curve_(curve_keys(config)),
      ctx_(1),
      zap_(zap_handler(ctx_, curve_)),
      router_(make_router(ctx_, socket_options())),
      optimizer_(make_optimizer(config.optimizer)),
      checkpointer_(config, rank),
      liveness_(config.cluster, Clock::now()),
      log_(config.limits.log_lines_per_s),
      error_budget_(config.limits.error_replies_per_s),
      timeline_(config.timeline, "server-" + std::to_string(rank), 1 + int(rank)),
      metrics_(Metrics::serve(config.metrics, "server", int(rank), int(rank))) {
  if (int64_t(rank) >= config.cluster.servers) {
    throw ConfigError("server rank " + std::to_string(rank) + " is outside cluster.servers = " +
                      std::to_string(config.cluster.servers));
  }
  endpoint_ = listen_as_server(router_, config.cluster, int(rank)).advertised;
  if (config.compression.codec != "none") {
    auto made = compress::make_codec(config.compression);
    if (!made) throw ConfigError(made.status().message());
    codec_ = std::move(made.value());
    wire_codec_ = static_cast<wire::Codec>(codec_->id());
  }
  if (config.compression.compress_replies) {
    // `published` keeps what was not sent (server_replies.cc).
    auto made = compress::make_codec(compress::reply_codec_config(config.compression));
    if (!made) throw ConfigError(made.status().message());
    reply_codec_ = std::move(made.value());
  }
  pool_ = std::make_unique<UpdatePool>(config.cluster.server_threads, wakeup_);
  last_progress_ = liveness_.started_at();
  wire::Register reg;
  reg.set_address(endpoint_);
  reg.set_resume(config.checkpoint.resume);
  for (uint64_t it : checkpointer_.start()) reg.add_checkpoints(it);
  if (rank == 0) {
    const RegisterLimits limits{server_memory_cap(config.limits), bytes_per_element(),
                                std::size_t(config.limits.max_string_bytes)};
    coordinator_.emplace(config.cluster.servers, config.cluster.workers, config.scheduler, limits);
    // Bound to the empty identity, which no connection can have: nobody else speaks as server 0.
    (void)coordinator_->on_register(Coordinator::self(), "", reg, liveness_.started_at());
  } else {
    to_coordinator_.emplace(
        make_dealer(ctx_, process_identity(wire::SERVER, rank), socket_options()));
    to_coordinator_->connect(config.cluster.coordinator);
    wire::Header h = make_header(self_, wire::REGISTER);
    *h.mutable_register_() = reg;
    send_envelope(*to_coordinator_, nullptr, h);
  }
}

Server::~Server() = default;

SocketOptions Server::socket_options() const {
  return {config_.limits.socket_hwm, curve_ ? &*curve_ : nullptr};
}

double Server::bytes_per_element() const {
  double floats = 1;  // the parameters
  if (config_.optimizer.type == "adam") {
    floats += 2;
  } else if (config_.optimizer.momentum > 0) {
    floats += 1;
  }
  if (config_.compression.compress_replies) floats += 1;  // what the workers hold
  return 4 * floats;
}

void Server::run() {
  spdlog::info("listening on {}{}", endpoint_, rank_ == 0 ? " (coordinator)" : "");
  if (metrics_.enabled()) {
    spdlog::info("metrics on http://{}:{}/metrics", config_.metrics.host, metrics_.port());
  }
  if (rank_ == 0 && coordinator_->all_registered()) on_membership(coordinator_->membership(), coordinator_->stage_map());
  Envelope env;
  while (!done_) {
    const auto now = Clock::now();
    check_timers(now);
    const auto wait = std::max(Clock::duration::zero(), liveness_.next_heartbeat() - Clock::now());
    zmq::pollitem_t items[4] = {{router_.handle(), 0, ZMQ_POLLIN, 0},
                                {nullptr, wakeup_.fd(), ZMQ_POLLIN, 0},
                                {nullptr, 0, ZMQ_POLLIN, 0},
                                {nullptr, 0, ZMQ_POLLIN, 0}};
    int n = 2;
    const int zap_item = zap_ ? n++ : -1;
    if (zap_) items[zap_item] = {zap_->socket().handle(), 0, ZMQ_POLLIN, 0};
    if (to_coordinator_) items[n++] = {to_coordinator_->handle(), 0, ZMQ_POLLIN, 0};
    zmq::poll(items, n, std::chrono::duration_cast<std::chrono::milliseconds>(wait) +
                            std::chrono::milliseconds(1));
    if (zap_ && (items[zap_item].revents & ZMQ_POLLIN) && zap_->handle() > 0) {
      log_.warn("curve", "refused a connection that does not hold this job's CURVE key");
    }
    if (items[1].revents & ZMQ_POLLIN) {
      wakeup_.drain();
      finish_updates();
    }
    // Bounded batches keep timers and completions responsive under a flood.
    for (int i = 0; i < 256 && !done_ && recv_envelope(router_, env, true); ++i) {
      on_router_message(env);
    }
    if (to_coordinator_) {
      for (int i = 0; i < 64 && !done_ && recv_envelope(*to_coordinator_, env, false); ++i) {
        on_coordinator_message(env);
      }
    }
  }
  timeline_.flush();
  if (timeline_.enabled()) spdlog::info("timeline written to {}", timeline_.path());
  log_.flush(Clock::now(), true);
  spdlog::info("shut down: {} pushes, {} duplicates, {} updates, {} errors, {} replies dropped",
               stats_.pushes, stats_.duplicates, stats_.updates, stats_.errors,
               stats_.dropped_replies + error_budget_.dropped());
}

void Server::check_timers(Clock::time_point now) {
  if (const auto stopped = liveness_.gap(now)) {
    // This process was not running (SIGSTOP, swapped out): what it could not hear is not its
    // peers' silence. Their messages are waiting; judge them once those are read.
    spdlog::warn("this server did not run for {:.1f} s; peers' silence is counted from now",
                 *stopped);
    if (coordinator_) coordinator_->refresh(now);
    last_progress_ = now;
  }
  log_.flush(now);
  if (liveness_.heartbeat_due(now)) {
    if (coordinator_) {
      broadcast(make_header(self_, wire::HEARTBEAT));
    } else {
      send_envelope(*to_coordinator_, nullptr, make_header(self_, wire::HEARTBEAT));
    }
    check_progress(now);
  }
  if (!coordinator_) {
    const auto verdict = liveness_.check(now, have_membership_, started_);
    if (!verdict) return;
    if (verdict->kind == Liveness::Verdict::kUnreachable) throw ConfigError(verdict->message);
    if (verdict->kind == Liveness::Verdict::kLostCoordinator) metrics_.lost_peer();
    abort_job(verdict->message);
  }
  if (auto lost = coordinator_->lost(now, seconds(config_.cluster.peer_timeout_s))) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.1f", coordinator_->silent_seconds(*lost, now));
    metrics_.lost_peer();
    abort_job(describe(*lost) + " lost: nothing heard from it for " + buf + " s");
  }
  if (!started_ && liveness_.start_overdue(now)) {
    const bool registered = coordinator_->all_registered();
    abort_job(std::string("gave up after ") + std::to_string(config_.cluster.start_timeout_s) +
              " s waiting for " + (registered ? "the start barrier" : "registration") +
              "; never came: " + coordinator_->missing(registered ? "start" : ""));
  }
}

void Server::check_progress(Clock::time_point now) {
  if (!started_ || config_.cluster.progress_timeout_s <= 0) return;
  const ChunkState* waiting = nullptr;
  for (std::size_t i = 0; i < chunks_.size() && !waiting; ++i) {
    const ChunkState& c = chunks_.at(uint32_t(i));
    if (c.arrived_count > 0 && !c.updating) waiting = &c;
  }
  if (!waiting) {
    last_progress_ = now;  // nobody is being waited for here
    return;
  }
  const double limit = config_.cluster.progress_timeout_s;
  if (now - last_progress_ <= seconds(limit)) return;
  std::string who, cycle;
  bool defer = true;  // every worker waited for says it waits for another server: it reports
  for (uint32_t w : waiting->holders) {
    if (waiting->arrived[w] || !waiting->held_by(w)) continue;
    who += (who.empty() ? "" : ", ") + peer_name(wire::WORKER, w);
    const WorkerWait* ww = w < worker_waits_.size() ? &worker_waits_[w] : nullptr;
    const bool heard = ww && now - ww->at <= seconds(limit);
    if (!heard || ww->server_plus_one == 0) defer = false;
    if (heard && ww->server_plus_one == rank_ + 1) {
      defer = false;
      cycle += ", and " + peer_name(wire::WORKER, w) + " waits for parameters from this server";
    }
  }
  if (defer) return;
  char buf[96];
  std::snprintf(buf, sizeof buf, "no training progress for %.0f s (cluster.progress_timeout_s): ",
                limit);
  abort_job(buf + std::string("server ") + std::to_string(rank_) + " waits for the push of " +
            who + " for tensor " + std::to_string(waiting->desc.key) + " offset " +
            std::to_string(waiting->desc.offset) + " iteration " +
            std::to_string(waiting->iteration) + cycle);
}

void Server::send(const std::string& identity, const wire::Header& h,
                  std::vector<zmq::message_t> payload) {
  metrics_.message(Metrics::Dir::kSent, metrics_kind(h.type()), payload_size(payload));
  bool full = false;
  if (send_envelope(router_, &identity, h, std::move(payload), &full)) return;
  if (full) {
    ++stats_.dropped_replies;
    log_.warn("full queue", std::string(wire::MsgType_Name(h.type())) + " to " +
                                printable(identity) +
                                " dropped: it does not read, its queue is at limits.socket_hwm");
  } else {
    spdlog::debug("{} to {} dropped: peer not connected", wire::MsgType_Name(h.type()),
                  printable(identity));
  }
}

}  // namespace psrt
