// PsClient, I/O-thread side: the only code that touches the sockets.
#include <spdlog/spdlog.h>

#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "worker/ps_client.h"

namespace psrt {

namespace {
using SteadyClock = std::chrono::steady_clock;
}  // namespace

bool PsClient::send_to(std::size_t server, const wire::Header& h,
                       std::vector<zmq::message_t> payload) {
  metrics_.message(Metrics::Dir::kSent, metrics_kind(h.type()), payload_size(payload));
  bool full = false;
  if (send_envelope(dealers_.at(server), nullptr, h, std::move(payload), &full)) return true;
  if (full) {
    log_.warn("full queue", std::string(wire::MsgType_Name(h.type())) + " to server " +
                                std::to_string(server) +
                                " dropped: its queue is at limits.socket_hwm");
  }
  return false;
}

wire::Header PsClient::tensor_header(wire::MsgType type, const ChunkDesc& c, uint64_t iteration) {
  wire::Header h = make_header(self_, type);
  h.set_key(c.key);
  h.set_offset(c.offset);
  h.set_length(c.length);
  h.set_iteration(iteration);
  h.set_priority(priority_[c.key]);
  h.set_codec(wire::CODEC_NONE);
  h.set_seq(++seq_);
  return h;
}

void PsClient::io_loop() {
  try {
    liveness_ = Liveness(config_.cluster, SteadyClock::now());
    wire::Header reg = make_header(self_, wire::REGISTER);
    for (const auto& t : model_.tensors) {
      auto* ti = reg.mutable_register_()->add_tensors();
      ti->set_key(t.key);
      ti->set_name(t.name);
      ti->set_num_elements(t.num_elements);
      ti->set_layer(t.layer);
    }
    reg.mutable_register_()->set_pid(uint32_t(::getpid()));
    reg.mutable_register_()->set_resume(config_.checkpoint.resume);
    // Constrains the resume point only if it has something to restore.
    reg.mutable_register_()->set_codec_state(encoder_ckpt_.enabled() &&
                                             (!config_.checkpoint.resume ||
                                              !encoder_checkpoints_.empty()));
    for (uint64_t it : encoder_checkpoints_) reg.mutable_register_()->add_checkpoints(it);
    if (stage_) {
      wire::StageInfo* si = reg.mutable_stage();
      si->set_stage(stage_->stage);
      si->set_stages(stage_->layout.stages);
      si->set_replica(stage_->replica);
      si->set_address(stage_address_);
      for (uint32_t key : stage_->keys) si->add_keys(key);
    }
    send_to(0, reg);

    Envelope env;
    std::vector<zmq::pollitem_t> items;
    while (true) {
      {
        std::lock_guard lock(mu_);
        if (error_ || finished_) break;
      }
      check_timers();
      take_commands();
      pump();
      pump_stage(StageDir::kForward);
      pump_stage(StageDir::kBackward);
      items.clear();
      items.push_back({nullptr, wakeup_.fd(), ZMQ_POLLIN, 0});
      for (auto& d : dealers_) items.push_back({d.handle(), 0, ZMQ_POLLIN, 0});
      // The previous stage's link delivers forward traffic, the next stage's backward traffic.
      const std::size_t in_at = stage_in_ ? items.size() : 0;
      if (stage_in_) items.push_back({stage_in_->handle(), 0, ZMQ_POLLIN, 0});
      const std::size_t out_at = stage_out_ ? items.size() : 0;
      if (stage_out_) items.push_back({stage_out_->handle(), 0, ZMQ_POLLIN, 0});
      const auto wait =
          std::max(SteadyClock::duration::zero(), liveness_.next_heartbeat() - SteadyClock::now());
      zmq::poll(items.data(), items.size(),
                std::chrono::duration_cast<std::chrono::milliseconds>(wait) +
                    std::chrono::milliseconds(1));
      if (items[0].revents & ZMQ_POLLIN) wakeup_.drain();
      for (std::size_t s = 0; s < dealers_.size(); ++s) {
        if (!(items[s + 1].revents & ZMQ_POLLIN)) continue;
        for (int i = 0; i < 256 && recv_envelope(dealers_[s], env, false); ++i) on_message(s, env);
      }
      if (in_at > 0 && (items[in_at].revents & ZMQ_POLLIN)) {
        for (int i = 0; i < 256 && recv_envelope(*stage_in_, env, true); ++i) {
          on_stage_message(StageDir::kForward, env);
        }
      }
      if (out_at > 0 && (items[out_at].revents & ZMQ_POLLIN)) {
        for (int i = 0; i < 256 && recv_envelope(*stage_out_, env, false); ++i) {
          on_stage_message(StageDir::kBackward, env);
        }
      }
    }
  } catch (const std::exception& e) {
    fail(std::string("I/O thread: ") + e.what());
  }
  // Sockets close here, in the thread that owns them; linger flushes what is queued.
  dealers_.clear();
  stage_in_.reset();
  stage_out_.reset();
}

void PsClient::on_message(std::size_t server, Envelope& env) {
  wire::Header h;
  WireError err;
  if (!decode_header(env.header, env.payload, config_.job.id, h, err)) {
    if (server == 0 && err.code == ErrorCode::kWrongJob && h.type() == wire::ERROR &&
        h.error().code() == uint32_t(ErrorCode::kWrongJob)) {
      refused("the coordinator at " + config_.cluster.coordinator +
              " serves another job: check job.id");
      return;
    }
    metrics_.error(error_code_name(err.code));
    log_.warn("bad message", "ignored a bad message from server " + std::to_string(server) +
                                 ": " + err.message);
    return;
  }
  metrics_.message(Metrics::Dir::kReceived, metrics_kind(h.type()), payload_size(env.payload));
  if (h.role() != wire::SERVER || h.rank() != server) {
    log_.warn("bad message", "ignored a message claiming to be " +
                                 peer_name(h.role(), h.rank()) + " on the link to server " +
                                 std::to_string(server));
    return;
  }
  if (server == 0) {
    liveness_.heard_coordinator(SteadyClock::now());
  }
  switch (h.type()) {
    case wire::HEARTBEAT: return;
    case wire::MEMBERSHIP: on_membership(h.membership(), h.stage_map()); return;
    case wire::BARRIER_RELEASE: on_release(h); return;
    case wire::ACK: on_ack(h); return;
    case wire::PARAMS: on_params(h, env.payload); return;
    case wire::ABORT:
      fail("job aborted by the coordinator: " + printable(h.error().message(), 4096));
      return;
    case wire::ERROR:
      metrics_.error("refused_by_server");
      if (server == 0 && h.error().about() == wire::REGISTER) {
        refused("the coordinator refused to register worker " + std::to_string(rank_) + ": " +
                printable(h.error().message(), 1024));
        return;
      }
      fail("server " + std::to_string(server) + " rejected " +
           wire::MsgType_Name(h.error().about()) + " of tensor " + std::to_string(h.key()) +
           " iteration " + std::to_string(h.iteration()) + ": " +
           printable(h.error().message(), 1024));
      return;
    default:
      log_.warn("bad message", std::string("ignored ") + wire::MsgType_Name(h.type()) +
                                   " from server " + std::to_string(server));
  }
}

void PsClient::on_release(const wire::Header& h) {
  std::lock_guard lock(mu_);
  if (h.barrier().name() == "start" && !started_) {
    started_ = true;
    // First values for everyone; they count as iteration 0.
    for (const auto& c : shards_.chunks()) {
      if (held_[c.key]) send_to(c.server, tensor_header(wire::PULL, c, 0));
    }
  } else if (h.barrier().name() == "shutdown") {
    finished_ = true;
  }
  cv_.notify_all();
}

void PsClient::on_ack(const wire::Header& h) {
  auto it = unacked_.find(h.seq());
  if (it == unacked_.end()) return;
  if (init_acks_ > 0 && --init_acks_ == 0) send_barrier("start");
  const InFlight& f = it->second;
  if (f.bytes > 0) {
    metrics_.round_trip(std::chrono::duration<double>(SteadyClock::now() - f.sent).count());
  }
  if (timeline_ && f.bytes > 0) {
    const ChunkDesc& c = shards_.chunks()[f.chunk];
    char args[96];
    std::snprintf(args, sizeof args, "{\"bytes\":%llu,\"server\":%u,\"iteration\":%llu}",
                  (unsigned long long)f.bytes, c.server, (unsigned long long)h.iteration());
    timeline_->flight("push", chunk_label(c.key, c.offset), h.seq(), f.enqueued,
                      SteadyClock::now(), args);
  }
  queue_.acked(f.bytes);
  unacked_.erase(it);
}

void PsClient::on_membership(const wire::Membership& m, const wire::StageMap& stages) {
  {
    std::lock_guard lock(mu_);
    if (have_membership_) return;  // a repeat
  }
  std::vector<ChunkDesc> chunks;
  for (const auto& c : m.chunks()) {
    ChunkDesc d;
    d.key = c.key();
    d.offset = c.offset();
    d.length = c.length();
    d.server = c.server();
    chunks.push_back(d);
  }
  try {
    shards_ = ShardMap(std::move(chunks), uint32_t(model_.tensors.size()), m.num_servers());
  } catch (const std::exception& e) {
    fail(std::string("unusable membership: ") + e.what());
    return;
  }
  for (uint32_t s = 1; s < m.num_servers(); ++s) {
    dealers_.push_back(new_dealer());
    dealers_.back().connect(m.server_addresses(int(s)));
  }
  if (stage_) {
    if (uint32_t(stages.workers_size()) != m.num_workers()) {
      fail("the membership carries no stage map for this model-parallel job");
      return;
    }
    connect_stage(stages, m.resume() ? m.resume_iteration() : 0);
  }
  {
    std::lock_guard lock(mu_);
    version_.assign(shards_.chunks().size(), -1);
    have_membership_ = true;
    start_iteration_ = m.resume() ? m.resume_iteration() : 0;
  }
  spdlog::info("membership: {} servers, {} chunks", m.num_servers(), shards_.chunks().size());
  try {
    plan_groups();
  } catch (const std::exception& e) {
    fail(std::string("scheduler.grouping: ") + e.what());
    return;
  }
  // A resumed job's servers hold their checkpoint's values: nothing to initialise.
  if (initialises() && !m.resume()) {
    send_init();
  } else {
    send_barrier("start");
  }
}

void PsClient::send_init() {
  for (const auto& c : shards_.chunks()) {
    if (!held_[c.key]) continue;
    wire::Header h = tensor_header(wire::INIT, c, 0);
    h.set_num_elements(c.length);
    h.set_payload_bytes(c.bytes());
    zmq::message_t frame(c.bytes());
    std::memcpy(frame.data(), params_(c.key).data() + c.offset, c.bytes());
    std::vector<zmq::message_t> payload;
    payload.push_back(std::move(frame));
    unacked_[h.seq()] = {0, c.id, {}, {}};
    ++init_acks_;
    send_to(c.server, h, std::move(payload));
  }
  if (init_acks_ == 0) send_barrier("start");  // a stage without parameters
}

void PsClient::send_barrier(const std::string& name) {
  wire::Header h = make_header(self_, wire::BARRIER);
  h.mutable_barrier()->set_name(name);
  send_to(0, h);
}

}  // namespace psrt
