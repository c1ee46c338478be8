// PsClient, I/O-thread side: the only code that touches the sockets.
#include <spdlog/spdlog.h>

#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "core/lost_send.h"
#include "core/shared_settings.h"
#include "core/stop_signals.h"
#include "worker/ps_client.h"

namespace psrt {

namespace {
using SteadyClock = std::chrono::steady_clock;
}  // namespace

bool PsClient::send_to(std::size_t server, const wire::Header& h,
                       std::vector<zmq::message_t> payload) {
  bool full = false;
  if (messenger_.send(servers_.at(server), nullptr, h, std::move(payload), &full)) return true;
  // Told on the next heartbeat (core/lost_send.h): by then the full queue has room for the word.
  if (full && lost_if_dropped(h.type()) && !lost_send_) {
    lost_send_ = lost_send_reason(h.type(), "server " + std::to_string(server),
                                  messenger_.options());
  }
  return false;
}

wire::Header& PsClient::tensor_header(wire::Header& h, wire::MsgType type, const ChunkDesc& c,
                                      uint64_t iteration) {
  reset_header(h, self_, type);
  h.set_key(c.key);
  h.set_offset(c.offset);
  h.set_length(c.length);
  h.set_iteration(iteration);
  h.set_priority(priority_[c.key]);
  h.set_codec(wire::CODEC_NONE);
  h.set_seq(pushes_.next_seq());
  return h;
}

void PsClient::io_loop() {
  StopSignals::block_in_this_thread();  // a stop signal's handler runs elsewhere: no EINTR here
  try {
    wire::Register reg;
    for (const auto& t : model_.tensors) {
      auto* ti = reg.add_tensors();
      ti->set_key(t.key);
      ti->set_name(t.name);
      ti->set_num_elements(t.num_elements);
      ti->set_layer(t.layer);
    }
    reg.set_pid(uint32_t(::getpid()));
    reg.set_iterations(uint64_t(std::max<int64_t>(0, config_.job.iterations)));
    reg.set_resume(config_.checkpoint.resume);
    for (const auto& line : shared_settings(config_)) reg.add_settings(line);
    // Constrains the resume point only if it has something to restore.
    reg.set_codec_state(encoder_ckpt_.enabled() &&
                        (!config_.checkpoint.resume || !encoder_checkpoints_.empty()));
    for (uint64_t it : encoder_checkpoints_) reg.add_checkpoints(it);
    if (rank_ == 0 && !stage_) search_grouping(reg);  // a stage groups nothing
    wire::StageInfo si;
    if (stage_) {
      si.set_stage(stage_->stage);
      si.set_stages(stage_->layout.stages);
      si.set_replica(stage_->replica);
      si.set_address(stage_address_);
      for (uint32_t key : stage_->keys) si.add_keys(key);
    }
    control_->register_with(reg, stage_ ? &si : nullptr);
    const auto done = [this] {
      std::lock_guard lock(mu_);
      return error_.has_value() || finished_;
    };
    messenger_.run(
        {done, [this](SteadyClock::time_point now) { return tick(now); }, nullptr, nullptr});
  } catch (const ConfigError& e) {  // this job's own settings (a model too large to register)
    report(e.what(), true);
  } catch (const std::exception& e) {
    report(std::string("I/O thread: ") + e.what());
  }
  // Sockets close here, in the thread that owns them; linger flushes what is queued.
  messenger_.close();
}

void PsClient::register_server(std::size_t server) {
  const Messenger::LinkId link = servers_.at(server);
  // Server 0's link is the coordinator's: ControlPlane checks the sender and takes the control
  // messages there.
  if (server > 0) {
    messenger_.expect_sender(link, wire::SERVER, uint32_t(server));
    messenger_.on(link, wire::HEARTBEAT, [](Inbound&) {});
    messenger_.on(link, wire::ERROR,
                  [this, server](Inbound& m) { on_server_error(server, m.header); });
  }
  messenger_.on(link, wire::ACK, [this, server](Inbound& m) {
    on_ack(server, m.header.seq());
    for (uint64_t seq : m.header.acks()) on_ack(server, seq);  // pushes acknowledged together
  });
  messenger_.on(link, wire::PARAMS,
                [this, server](Inbound& m) { on_params(server, m.header, m.payload); });
  messenger_.on_drop(link, [this, server] {
    drops_.dropped("server " + std::to_string(server), SteadyClock::now());
  });
}

void PsClient::on_server_error(std::size_t server, const wire::Header& h) {
  metrics_.error("refused_by_server");
  report("server " + std::to_string(server) + " rejected " + wire::MsgType_Name(h.error().about()) +
       " of tensor " + std::to_string(h.key()) + " iteration " + std::to_string(h.iteration()) +
       ": " + printable(h.error().message(), 1024));
}

void PsClient::on_release(const std::string& barrier) {
  std::lock_guard lock(mu_);
  if (barrier == "start" && !started_) {
    started_ = true;
    // First values for everyone; they count as iteration 0. Paced like the INITs: each PARAMS
    // lets the next PULL to its server go (on_params).
    start_.begin(StartPacer::Phase::kPull, held_chunks(), start_window());
    start_.release([this](std::size_t, uint32_t c) { send_pull(shards_.chunks()[c]); });
  } else if (barrier == "shutdown") {
    finished_ = true;
  }
  cv_.notify_all();
}

void PsClient::on_ack(std::size_t server, uint64_t seq) {
  // Only the server a push went to acknowledges it (another's ACK would release its credit and,
  // folded into PARAMS, count a push as aggregated that its server has not seen).
  const CreditLink::Sent* to = pushes_.find(seq);
  if (to && shards_.chunks()[to->tag].server != server) {
    log_.warn("bad message", "ignored server " + std::to_string(server) +
                                 "'s acknowledgement of push " + std::to_string(seq) +
                                 ", which went to server " +
                                 std::to_string(shards_.chunks()[to->tag].server));
    return;
  }
  const auto sent = pushes_.acked(seq);
  if (!sent) return;
  // Worker 0's INITs go out paced (worker/start_pacer.h): each acknowledged one lets the next go.
  auto next_init = [this](std::size_t, uint32_t c) { send_init(shards_.chunks()[c]); };
  if (start_.answered(StartPacer::Phase::kInit, server, next_init) && start_.unanswered() == 0) {
    send_barrier("start");
  }
  const CreditLink::Sent& f = *sent;
  if (f.bytes > 0) {
    metrics_.round_trip(std::chrono::duration<double>(SteadyClock::now() - f.sent).count());
  }
  if (timeline_ && f.bytes > 0) {
    const ChunkDesc& c = shards_.chunks()[f.tag];
    char args[96];
    std::snprintf(args, sizeof args, "{\"bytes\":%llu,\"server\":%u,\"iteration\":%llu}",
                  (unsigned long long)f.bytes, c.server, (unsigned long long)f.iteration);
    timeline_->flight("push", chunk_label(c.key, c.offset), seq, f.enqueued,
                      SteadyClock::now(), args);
  }
  queue_.acked(f.bytes);
}

void PsClient::flush_reply_acks() {
  for (std::size_t s = 0; s < reply_acks_.size(); ++s) {
    PendingAcks& p = reply_acks_[s];
    if (p.seqs.empty()) continue;
    send_to(s, acks_header(ack_out_, self_, *p.first, p.iteration, p.seqs));
    p.seqs.clear();
  }
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
    report(std::string("unusable membership: ") + e.what());
    return;
  }
  if (!m.resume()) encoder_ckpt_.fresh_start();  // the whole job starts fresh: the coordinator says
  encoder_ckpt_.remove_unfinished();
  for (uint32_t s = 1; s < m.num_servers(); ++s) {
    servers_.push_back(messenger_.add_dealer("server " + std::to_string(s), identity_));
    messenger_.socket(servers_.back()).connect(m.server_addresses(int(s)));
    register_server(s);
  }
  if (stage_) {
    if (uint32_t(stages.workers_size()) != m.num_workers()) {
      report("the membership carries no stage map for this model-parallel job");
      return;
    }
    connect_stage(stages, m.resume() ? m.resume_iteration() : 0);
  }
  {
    std::lock_guard lock(mu_);
    version_.assign(shards_.chunks().size(), -1);
    reply_acks_.assign(m.num_servers(), {});
    have_membership_ = true;
    start_iteration_ = m.resume() ? m.resume_iteration() : 0;
  }
  spdlog::info("membership: {} servers, {} chunks", m.num_servers(), shards_.chunks().size());
  try {
    plan_groups(m);
  } catch (const std::exception& e) {
    report(e.what());
    return;
  }
  // A resumed job's servers hold their checkpoint's values: nothing to initialise.
  if (initialises() && !m.resume()) {
    send_init();
  } else {
    send_barrier("start");
  }
}

std::vector<std::deque<uint32_t>> PsClient::held_chunks() const {
  std::vector<std::deque<uint32_t>> out(shards_.num_servers());
  for (const auto& c : shards_.chunks()) {
    if (held_[c.key]) out[c.server].push_back(c.id);
  }
  return out;
}

std::size_t PsClient::start_window() const {
  // A quarter of the high-water mark: ZeroMQ tells the sender of room in steps of half of it,
  // and the control messages share the link.
  return std::size_t(std::max(1, messenger_.options().hwm / 4));
}

void PsClient::send_init() {
  start_.begin(StartPacer::Phase::kInit, held_chunks(), start_window());
  if (start_.unanswered() == 0) {  // a stage without parameters
    send_barrier("start");
    return;
  }
  start_.release([this](std::size_t, uint32_t c) { send_init(shards_.chunks()[c]); });
}

void PsClient::send_init(const ChunkDesc& c) {
  wire::Header h;
  tensor_header(h, wire::INIT, c, 0);
  h.set_num_elements(c.length);
  h.set_payload_bytes(c.bytes());
  zmq::message_t frame(c.bytes());
  std::memcpy(frame.data(), params_(c.key).data() + c.offset, c.bytes());
  std::vector<zmq::message_t> payload;
  payload.push_back(std::move(frame));
  pushes_.sent(h.seq(), {0, c.id, {}, {}});
  send_to(c.server, h, std::move(payload));
}

void PsClient::send_pull(const ChunkDesc& c) {
  wire::Header pull;
  send_to(c.server, tensor_header(pull, wire::PULL, c, 0));
}

void PsClient::send_barrier(const std::string& name) { control_->arrive(name); }

}  // namespace psrt
