#include "server/server.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "compress/job_config.h"
#include "compress/registry.h"
#include "core/status.h"

namespace psrt {

namespace {
Clock::duration seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}
}  // namespace

Server::Server(const Config& config, uint32_t rank)
    : config_(config),
      rank_(rank),
      self_{wire::SERVER, rank, config.job.id},
      ctx_(1),
      router_(make_router(ctx_)),
      optimizer_(make_optimizer(config.optimizer)),
      checkpointer_(config, rank),
      timeline_(config.timeline, "server-" + std::to_string(rank), 1 + int(rank)) {
  if (int64_t(rank) >= config.cluster.servers) {
    throw ConfigError("server rank " + std::to_string(rank) + " is outside cluster.servers = " +
                      std::to_string(config.cluster.servers));
  }
  try {
    endpoint_ = rank == 0 ? bind_endpoint(router_, config.cluster.coordinator)
                          : bind_endpoint(router_, "tcp://" + config.cluster.bind_host + ":0");
  } catch (const zmq::error_t& e) {
    throw ConfigError("server " + std::to_string(rank) + " cannot bind " +
                      (rank == 0 ? config.cluster.coordinator : config.cluster.bind_host) + ": " +
                      e.what());
  }
  if (config.compression.codec != "none") {
    auto made = compress::make_codec(compress::codec_config(config.compression));
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
  started_at_ = Clock::now();
  coordinator_seen_ = started_at_;
  next_heartbeat_ = started_at_;
  wire::Register reg;
  reg.set_address(endpoint_);
  reg.set_resume(config.checkpoint.resume);
  for (uint64_t it : checkpointer_.start()) reg.add_checkpoints(it);
  if (rank == 0) {
    coordinator_.emplace(config.cluster.servers, config.cluster.workers, config.scheduler);
    (void)coordinator_->on_register(Coordinator::self(), reg, started_at_);
  } else {
    to_coordinator_.emplace(make_dealer(ctx_, routing_id(wire::SERVER, rank)));
    to_coordinator_->connect(config.cluster.coordinator);
    wire::Header h = make_header(self_, wire::REGISTER);
    *h.mutable_register_() = reg;
    send_envelope(*to_coordinator_, nullptr, h);
  }
}

Server::~Server() = default;

void Server::run() {
  spdlog::info("listening on {}{}", endpoint_, rank_ == 0 ? " (coordinator)" : "");
  if (rank_ == 0 && coordinator_->all_registered()) on_membership(coordinator_->membership());
  Envelope env;
  while (!done_) {
    const auto now = Clock::now();
    check_timers(now);
    const auto wait = std::max(Clock::duration::zero(), next_heartbeat_ - Clock::now());
    zmq::pollitem_t items[3] = {{router_.handle(), 0, ZMQ_POLLIN, 0},
                                {nullptr, wakeup_.fd(), ZMQ_POLLIN, 0},
                                {nullptr, 0, ZMQ_POLLIN, 0}};
    int n = 2;
    if (to_coordinator_) items[n++] = {to_coordinator_->handle(), 0, ZMQ_POLLIN, 0};
    zmq::poll(items, n, std::chrono::duration_cast<std::chrono::milliseconds>(wait) +
                            std::chrono::milliseconds(1));
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
  spdlog::info("shut down: {} pushes, {} duplicates, {} updates, {} errors", stats_.pushes,
               stats_.duplicates, stats_.updates, stats_.errors);
}

void Server::check_timers(Clock::time_point now) {
  if (now >= next_heartbeat_) {
    next_heartbeat_ = now + seconds(config_.cluster.heartbeat_s);
    if (coordinator_) {
      broadcast(make_header(self_, wire::HEARTBEAT));
    } else {
      send_envelope(*to_coordinator_, nullptr, make_header(self_, wire::HEARTBEAT));
    }
  }
  const auto start_limit = seconds(config_.cluster.start_timeout_s);
  if (coordinator_) {
    if (auto lost = coordinator_->lost(now, seconds(config_.cluster.peer_timeout_s))) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.1f", coordinator_->silent_seconds(*lost, now));
      abort_job(describe(*lost) + " lost: nothing heard from it for " + buf + " s");
    }
    if (!started_ && now - started_at_ > start_limit) {
      const bool registered = coordinator_->all_registered();
      abort_job(std::string("gave up after ") + std::to_string(config_.cluster.start_timeout_s) +
                " s waiting for " + (registered ? "the start barrier" : "registration") +
                "; never came: " + coordinator_->missing(registered ? "start" : ""));
    }
  } else {
    if (have_membership_ && now - coordinator_seen_ > seconds(config_.cluster.peer_timeout_s)) {
      throw JobError("lost the coordinator (server 0 at " + config_.cluster.coordinator +
                     "): nothing heard from it for " +
                     std::to_string(config_.cluster.peer_timeout_s) + " s");
    }
    if (!started_ && now - started_at_ > start_limit) {
      throw JobError("gave up after " + std::to_string(config_.cluster.start_timeout_s) +
                     " s waiting for the " + (have_membership_ ? "start barrier" : "membership") +
                     " from the coordinator at " + config_.cluster.coordinator);
    }
  }
}

void Server::send(const std::string& identity, const wire::Header& h,
                  std::vector<zmq::message_t> payload) {
  if (!send_envelope(router_, &identity, h, std::move(payload))) {
    spdlog::debug("{} to {} dropped: peer not connected", wire::MsgType_Name(h.type()), identity);
  }
}

}  // namespace psrt
