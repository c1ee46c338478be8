#include "server/server.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "compress/job_config.h"
#include "compress/registry.h"
#include "core/abort_notice.h"
#include "core/shared_settings.h"
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

Server::Server(const Config& config, uint32_t rank, zmq::context_t* shared)
    : config_(config),
      rank_(rank),
      self_{wire::SERVER, rank, config.job.id},
      log_(config.limits.log_lines_per_s),
      metrics_(Metrics::serve(config.metrics, "server", int(rank), int(rank))),
      curve_(curve_keys(config)),
      messenger_(config.job.id,
                 socket_options(config.limits, curve_ ? &*curve_ : nullptr,
                                config.scheduler.credit_bytes, uses_ipv6(config.cluster)),
                 metrics_, log_, shared),
      zap_(zap_handler(messenger_.context(), curve_)),
      router_(messenger_.add_router("a peer")),
      optimizer_(make_optimizer(config.optimizer)),
      checkpointer_(config, rank, [this] { messenger_.wakeup().notify(); }),
      liveness_(config.cluster, Clock::now()),
      error_budget_(config.limits.error_replies_per_s),
      timeline_(config.timeline, "server-" + std::to_string(rank), 1 + int(rank)) {
  if (int64_t(rank) >= config.cluster.servers) {
    throw ConfigError("server rank " + std::to_string(rank) + " is outside cluster.servers = " +
                      std::to_string(config.cluster.servers));
  }
  endpoint_ = listen_as_server(messenger_.socket(router_), config.cluster, int(rank)).advertised;
  batch_bytes_ = config.scheduler.batch_bytes;
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
  pool_ = std::make_unique<UpdatePool>(config.cluster.server_threads, messenger_.wakeup());
  last_progress_ = liveness_.started_at();
  register_handlers();
  if (zap_) {
    messenger_.watch(zap_->socket(), [this] {
      if (zap_->handle() > 0) {
        log_.warn("curve", "refused a connection that does not hold this job's CURVE key");
      }
    });
  }
  watch_listener();
  wire::Register reg;
  reg.set_address(endpoint_);
  reg.set_resume(config.checkpoint.resume);
  for (const auto& line : shared_settings(config)) reg.add_settings(line);
  for (uint64_t it : checkpointer_.start()) reg.add_checkpoints(it);
  if (rank == 0) {
    const RegisterLimits limits{server_memory_cap(config.limits), bytes_per_element(),
                                std::size_t(config.limits.max_string_bytes),
                                is_inproc(config.cluster.coordinator) ? "inproc://" : "tcp://"};
    coordinator_.emplace(config.cluster.servers, config.cluster.workers, config.scheduler, limits);
    // Bound to the empty identity, which no connection can have: nobody else speaks as server 0.
    (void)coordinator_->on_register(Coordinator::self(), "", reg, liveness_.started_at());
  } else {
    const auto link =
        messenger_.add_dealer("the coordinator", process_identity(wire::SERVER, rank));
    check_coordinator_port(config.cluster.coordinator);
    messenger_.socket(link).connect(config.cluster.coordinator);
    drops_ = DropWatch(DropWatch::grace_for(config.cluster.heartbeat_s));
    messenger_.on_drop(link, [this] { drops_.dropped("server 0", Clock::now()); });
    control_.emplace(messenger_, link, self_, config.cluster,
                     std::size_t(config.limits.max_string_bytes), member_events());
    control_->register_with(reg);
  }
}

void Server::watch_listener() {
  const int events = SocketMonitor::kAcceptFailed | (zap_ ? SocketMonitor::kFailedHandshakes : 0);
  listener_events_.emplace(messenger_.context(), messenger_.socket(router_), events);
  messenger_.watch(listener_events_->socket(), [this] {
    listener_events_->handle([this](int event, int value) {
      if (event != SocketMonitor::kAcceptFailed) {
        log_.warn("handshake",
                  "a connection failed the CURVE handshake: a process with another "
                  "security.secret_file, or with security.curve off");
        return;
      }
      std::string line = "could not accept a connection: ";
      line += std::strerror(value);
      if (value == EMFILE || value == ENFILE) {
        line +=
            " (the open-file limit, ulimit -n; connections that send nothing use it up: "
            "security.curve refuses a stranger's at once)";
      }
      log_.warn("accept", line);
    });
  });
}

// Updates still in the pool (an abort can leave some) use the chunks, the codecs and the timeline,
// which are declared after the pool and so would be destroyed before it: it is joined first.
Server::~Server() { pool_.reset(); }

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
    spdlog::info("metrics on {}", metrics_url(config_.metrics.host, metrics_.port()));
  }
  if (rank_ == 0 && coordinator_->all_registered()) {
    on_membership(coordinator_->membership(), coordinator_->stage_map());
  }
  const auto looping = [this](bool on) {
    std::lock_guard lock(stop_mu_);
    looping_ = on;
  };
  looping(true);
  try {
    try {
      messenger_.run({[this] { return done_; },
                      [this](Clock::time_point now) { return tick(now); },
                      [this] { finish_updates(); }, [this] { flush_replies(); }});
    } catch (const JobError&) {
      throw;
    } catch (const ConfigError&) {  // refused: a start-up error of its own, told by the coordinator
      throw;
    } catch (const std::exception& e) {
      // This server's own failure (memory, an internal error; on the I/O thread, or on a pool
      // thread through UpdatePool): told to the job now over this server's own links, where the
      // others found it silent only after cluster.peer_timeout_s. It ends as the job's failure.
      const std::string why = failure_reason(e);
      abort_job(control_ ? why : "server 0 gave up: " + why);
    }
  } catch (const JobError& e) {
    bool stopped = false;
    {
      std::lock_guard lock(stop_mu_);
      looping_ = false;
      stopped = stop_taken_;
    }
    // Written now, while this server's stop target lives: a signal then leaves it its grace
    // (request_stop); once the target is gone, one killed the process before ~Server wrote it.
    timeline_.flush();
    // Told to stop (a signal): no window for latecomers, which outlasted the signal's grace and
    // ended the server by the signal after all.
    if (coordinator_ && !stopped) tell_latecomers(e.what());
    throw;
  } catch (...) {
    looping(false);
    timeline_.flush();
    throw;
  }
  looping(false);
  timeline_.flush();
  checkpointer_.summarize();
  log_.flush(Clock::now(), true);
  spdlog::info("shut down: {} pushes, {} duplicates, {} updates, {} errors, {} replies dropped",
               stats_.pushes, stats_.duplicates, stats_.updates, stats_.errors,
               stats_.dropped_replies + error_budget_.dropped());
}

bool Server::request_stop(const std::string& why) {
  std::lock_guard lock(stop_mu_);
  // Its loop is over: it is ending and writes its outputs (timeline, checkpoints) first, within
  // the signal's grace. Declined, the signal ended it at once and a Ctrl-C lost those files.
  if (!looping_) return true;
  if (!stop_why_) stop_why_ = why;
  stop_pending_.store(true);
  messenger_.wakeup().notify();
  return true;
}

Clock::time_point Server::tick(Clock::time_point now) {
  std::optional<std::string> stop;
  if (stop_pending_.load(std::memory_order_relaxed)) {  // no lock on every pass
    std::lock_guard lock(stop_mu_);
    stop.swap(stop_why_);
  }
  if (stop) {
    {
      std::lock_guard lock(stop_mu_);
      stop_taken_ = true;
    }
    abort_job(control_ ? *stop : "server 0 gave up: " + *stop);  // as in run()
  }
  check_checkpoint_failures();
  if (const auto why = drops_.due(now); why && !done_) abort_job(*why);
  if (control_) return control_->tick(now, have_membership_, started_);
  return coordinator_tick(now);
}

Clock::time_point Server::coordinator_tick(Clock::time_point now) {
  if (liveness_.gap(now)) {  // this process did not run: every peer's silence counts from now
    coordinator_->refresh(now);
    last_progress_ = now;
  }
  if (liveness_.heartbeat_due(now)) {
    wire::Header h = make_header(self_, wire::HEARTBEAT);
    if (keeping_) h.set_keep_checkpoints(true);  // for any that missed it
    broadcast(h);
    check_progress(now);
  }
  if (auto lost = coordinator_->lost(now, seconds(config_.cluster.peer_timeout_s))) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.1f", coordinator_->silent_seconds(*lost, now));
    metrics_.lost_peer();
    abort_job(describe(*lost) + " lost: nothing heard from it for " + buf + " s");
  }
  if (!started_ && liveness_.start_overdue(now)) {
    const bool registered = coordinator_->all_registered();
    // Registered but not started: a large model may still be building or sending its values.
    const std::string waits = registered ? start_waits() : "";
    abort_job(std::string("gave up after ") + seconds_text(config_.cluster.start_timeout_s) +
              " s waiting for " + (registered ? "the start barrier" : "registration") +
              "; never came: " + coordinator_->missing(registered ? "start" : "") +
              (!waits.empty() ? waits
               : registered   ? " (registered, but its start did not end: a large model's "
                                "building and initial values may need a longer "
                                "cluster.start_timeout_s)"
                              : "") +
              (version_refused_.empty()
                   ? ""
                   : "; a process was refused for its protocol version: " + version_refused_ +
                         ": every process of a job must run the same psrt release"));
  }
  return liveness_.next_heartbeat();
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
  bool full = false;
  if (!messenger_.send(router_, &identity, h, std::move(payload), &full) && full) {
    ++stats_.dropped_replies;
  }
}

}  // namespace psrt
