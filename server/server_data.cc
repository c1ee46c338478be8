// The data plane of psrt-server: INIT, PULL and PUSH of chunks and their aggregation (the replies
// go out through server_reply_queue.cc).
#include <spdlog/spdlog.h>

#include <cstring>

#include "compress/wire_format.h"
#include "core/float_checks.h"
#include "server/server.h"

namespace psrt {

namespace {
PeerId peer_of(const std::string& identity) {
  PeerId from{wire::ROLE_UNSPECIFIED, 0};
  (void)parse_identity(identity, from.role, from.rank);
  return from;
}
}  // namespace

void Server::register_handlers() {
  messenger_.on_bad(router_, [this](const std::string& identity, const wire::Header&,
                                    const WireError& e) {
    if (e.code == ErrorCode::kVersion && !started_ && version_refused_.empty()) {
      const PeerId from = peer_of(identity);
      // Built by appending: GCC 12 warns (-Wrestrict) at "'" + std::string.
      std::string who = from.role == wire::ROLE_UNSPECIFIED ? printable(identity) : describe(from);
      who += " (";
      who += e.message;
      who += ")";
      version_refused_ = std::move(who);
    }
    reply_error(identity, nullptr, e);
  });
  messenger_.admit(router_, [this](Inbound& m) { return admit(m); });
  const auto tensor = [this](Inbound& m) {
    on_tensor(m.identity, peer_of(m.identity), m.header, m.payload);
  };
  for (int t = wire::MsgType_MIN; t <= wire::MsgType_MAX; ++t) {
    const auto type = static_cast<wire::MsgType>(t);
    if (wire::MsgType_IsValid(t) && is_tensor_message(type)) messenger_.on(router_, type, tensor);
  }
  // The control plane: REGISTER, BARRIER, HEARTBEAT, ABORT; anything else is refused there.
  messenger_.otherwise(router_, [this](Inbound& m) {
    on_control(m.identity, peer_of(m.identity), m.header);
  });
}

bool Server::admit(Inbound& m) {
  PeerId from{wire::ROLE_UNSPECIFIED, 0};
  if (!parse_identity(m.identity, from.role, from.rank) || from.role != m.header.role() ||
      from.rank != m.header.rank()) {
    // The identity is not quoted: it is raw bytes of the peer's choosing.
    reply_error(m.identity, &m.header,
                {ErrorCode::kNotRegistered, "header says " +
                                                peer_name(m.header.role(), m.header.rank()) +
                                                " but the connection belongs to another process"});
    return false;
  }
  return admitted(m.identity, from, m.header);
}

bool Server::admitted(const std::string& identity, PeerId from, const wire::Header& h) {
  if (coordinator_) return coordinator_admits(identity, from, h);
  // Servers other than 0 learn from the membership which connection each worker registered with.
  if (!have_membership_) {
    // A worker's heartbeat may overtake the membership the coordinator sent here: no error.
    if (h.type() != wire::HEARTBEAT) {
      reply_error(identity, &h, {ErrorCode::kNotReady, "membership not known yet"});
    }
    return false;
  }
  if (from.role != wire::WORKER || from.rank >= worker_ids_.size() ||
      worker_ids_[from.rank] != identity) {
    reply_error(identity, &h,
                {ErrorCode::kNotRegistered,
                 describe(from) + " has not registered over this connection"});
    return false;
  }
  return true;
}

void Server::on_tensor(const std::string& identity, PeerId from, const wire::Header& h,
                       std::vector<zmq::message_t>& payload) {
  if (from.role != wire::WORKER || int64_t(from.rank) >= config_.cluster.workers) {
    reply_error(identity, &h, {ErrorCode::kNotRegistered,
                               describe(from) + " may not send tensor traffic"});
    return;
  }
  if (!have_membership_) {
    reply_error(identity, &h, {ErrorCode::kNotReady, "membership not known yet"});
    return;
  }
  WireError err;
  ChunkState* c = chunks_.find(h, err);
  if (!c) {
    reply_error(identity, &h, err);
    return;
  }
  if (!c->held_by(from.rank)) {
    reply_error(identity, &h, not_held(from, h.key()));
    return;
  }
  switch (h.type()) {
    case wire::INIT: {
      if (from.rank != c->holders.front() || started_) {
        reply_error(identity, &h, {ErrorCode::kUnexpected,
                                   "INIT is taken from the tensor's first holder (worker 0 "
                                   "without model parallelism) before the start barrier only"});
        return;
      }
      if (h.codec() != wire::CODEC_NONE || payload.size() != 1) {
        reply_error(identity, &h, {ErrorCode::kBadPayload, "INIT must be one uncompressed frame"});
        return;
      }
      if (!resumed_) {  // a resumed job keeps its checkpoint's values
        std::memcpy(c->params->data(), payload[0].data(), c->desc.bytes());
        c->initialized = true;
        if (reply_codec_) publish_initial(*c);
      }
      wire::Header ack = make_header(self_, wire::ACK);
      ack.set_key(h.key());
      ack.set_offset(h.offset());
      ack.set_length(h.length());
      ack.set_seq(h.seq());
      send(identity, ack);
      return;
    }
    case wire::PULL:
      if (!c->initialized) {
        reply_error(identity, &h, {ErrorCode::kNotReady, "chunk has no initial values yet"});
        return;
      }
      if (c->updating) {
        return;  // the reply to every worker follows when the update finishes
      }
      queue_reply(from.rank, *c, /*dense=*/true);
      return;
    case wire::ACK: on_reply_ack(from.rank, h); return;
    case wire::PUSH: on_push(identity, from, h, *c, payload); return;
    default:
      reply_error(identity, &h, {ErrorCode::kUnexpected,
                                 std::string(wire::MsgType_Name(h.type())) +
                                     " is not a request a server takes"});
  }
}

void Server::on_push(const std::string& identity, PeerId from, const wire::Header& h, ChunkState& c,
                     std::vector<zmq::message_t>& payload) {
  // Worker 0's choice after online grouping trials, relayed on every later reply.
  if (from.role == wire::WORKER && from.rank == 0 && h.grouping_choice() > 0) {
    grouping_choice_ = h.grouping_choice();
    grouping_from_ = h.grouping_from();
  }
  if (h.members_size() > 0) {
    on_group_push(identity, from, h, payload);
    return;
  }
  if (payload.size() != 1) {
    reply_error(identity, &h,
                {ErrorCode::kBadPayload,
                 "a push carries one frame, got " + std::to_string(payload.size())});
    return;
  }
  if (auto err = check_push(h, c, payload[0])) {
    reply_error(identity, &h, *err);
    return;
  }
  // A small push that completes its chunk is updated inline and replied to at once: its ACK
  // rides on that reply (two messages per round trip). Any other push is acknowledged now: an
  // earlier one so that its credit does not wait for the other workers, a large one so that the
  // worker's next push overlaps the update and the reply (a folded ACK would arrive only with the
  // reply's last byte).
  if (completes_inline(from, c)) {
    hold_ack(from.rank, h, c);
  } else {
    send(identity, push_ack(h));
  }
  accept_push(from, h, c, payload[0]);  // pushed alone: replied alone
  // Without batching the reply has gone, carrying the ACK, unless it waits for reply credit:
  // then the ACK goes alone, now. With batching both go once this pass is over.
  if (batch_bytes_ == 0) send_held_acks(from.rank);
}

bool Server::completes_inline(PeerId from, const ChunkState& c) const {
  return !c.arrived[from.rank] && c.arrived_count + 1 == c.holders.size() &&
         c.desc.bytes() <= kInlineUpdateBytes;
}

void Server::hold_ack(uint32_t worker, const wire::Header& h, const ChunkState& c) {
  ReplyLink& link = replies_[worker];
  if (link.held_acks.empty()) {
    link.held_about = &c.desc;
    link.held_iteration = h.iteration();
  }
  link.held_acks.push_back(h.seq());
  reply_soon(worker, true);  // the completing push's reply follows at once
}

std::optional<WireError> Server::check_push(const wire::Header& h, ChunkState& c,
                                            zmq::message_t& frame) const {
  // Not `started_`: the coordinator's release of the start barrier travels to this server and to
  // the workers on separate connections, and a worker's first push (a pipeline's last stage pushes
  // a few milliseconds after the release) may arrive before this server's copy. A chunk is
  // initialised (INIT, or a checkpoint) only after the membership and before any worker may
  // arrive at the barrier, so a push for it can only follow the release.
  if (!c.initialized || !have_membership_) {
    return WireError{ErrorCode::kNotReady, "push before the start barrier"};
  }
  if (c.updating || h.iteration() != c.iteration) {
    return WireError{ErrorCode::kOutOfStep,
                     "push for iteration " + std::to_string(h.iteration()) + ", chunk (" +
                         std::to_string(h.key()) + ", " + std::to_string(h.offset()) + ") is " +
                         (c.updating ? "updating iteration " : "collecting iteration ") +
                         std::to_string(c.iteration)};
  }
  if (h.codec() != wire_codec_) {
    return WireError{ErrorCode::kBadPayload, "this job pushes codec " +
                                                 std::string(wire::Codec_Name(wire_codec_)) +
                                                 ", got " + wire::Codec_Name(h.codec())};
  }
  if (codec_) {
    auto view = compress::parse_payload({static_cast<const uint8_t*>(frame.data()), frame.size()});
    Status st = view ? compress::validate_contents(*view) : view.status();
    if (st && (uint8_t(view->header.codec) != uint8_t(wire_codec_) ||
               view->header.length != h.length())) {
      st = Status::error("payload holds " + std::to_string(view->header.length) +
                         " elements of codec " + std::to_string(int(view->header.codec)));
    }
    if (!st) return WireError{ErrorCode::kBadPayload, "compressed payload: " + st.message()};
  }
  if (!codec_ && !config_.limits.allow_non_finite) {
    frame = aligned_frame(std::move(frame));
    const std::size_t bad =
        count_non_finite({static_cast<const float*>(frame.data()), std::size_t{h.length()}});
    if (bad > 0) {
      return WireError{ErrorCode::kNonFinite,
                       std::to_string(bad) + " of the " + std::to_string(h.length()) +
                           " gradient values of tensor " + std::to_string(h.key()) + " offset " +
                           std::to_string(h.offset()) +
                           " are NaN or infinite (limits.allow_non_finite: false)"};
    }
  }
  return std::nullopt;
}

const wire::Header& Server::push_ack(const wire::Header& h) {
  wire::Header& ack = reset_header(ack_out_, self_, wire::ACK);
  ack.set_key(h.key());
  ack.set_offset(h.offset());
  ack.set_length(h.length());
  ack.set_iteration(h.iteration());
  ack.set_payload_bytes(0);
  ack.set_seq(h.seq());
  ack.set_num_elements(h.payload_bytes());  // bytes acknowledged, for the sender's credit
  return ack;
}

void Server::accept_push(PeerId from, const wire::Header& h, ChunkState& c, zmq::message_t& frame,
                         ChunkGroup group) {
  if (c.arrived[from.rank]) {
    ++stats_.duplicates;
    spdlog::debug("duplicate push from {} for ({}, {}) iteration {} counted once", describe(from),
                  h.key(), h.offset(), h.iteration());
    return;
  }
  c.priority = h.priority();
  c.groups[from.rank] = std::move(group);
  c.pushes[from.rank] = aligned_frame(std::move(frame));
  c.arrived[from.rank] = 1;
  ++c.arrived_count;
  ++stats_.pushes;
  if (c.arrived_count == c.holders.size()) start_update(c);
}

void Server::update_chunk(ChunkState& c, UpdateScratch& scratch) {
  const auto start = Timeline::Clock::now();
  if (c.params.use_count() > 1) c.params = std::make_shared<std::vector<float>>(*c.params);
  aggregate_and_step(c, scratch);
  if (reply_codec_) encode_reply(c);
  if (timeline_.enabled()) {
    const auto track = c.desc.bytes() <= kInlineUpdateBytes ? Timeline::kIo : Timeline::kPool;
    timeline_.span(track, "update", chunk_label(c.desc.key, c.desc.offset, int64_t(c.iteration)),
                   start, Timeline::Clock::now());
  }
}

void Server::aggregate_and_step(ChunkState& c, UpdateScratch& scratch) {
  std::span<float> params(c.params->data(), c.params->size());
  if (codec_) {
    // Decode and accumulate in rank order (checked on arrival), then the mean.
    scratch.grad.assign(c.desc.length, 0.0f);  // keeps the capacity of earlier updates
    const std::span<float> grad(scratch.grad);
    for (uint32_t w : c.holders) {
      const auto& m = c.pushes[w];
      (void)codec_->decode_accumulate({static_cast<const uint8_t*>(m.data()), m.size()}, grad);
    }
    codec_->finish_aggregate(grad, int(c.holders.size()));
    const float scale = 1.0f / float(c.holders.size());
    for (auto& g : grad) g *= scale;
    optimizer_->update(params, grad, c.opt);
    return;
  }
  std::vector<const float*>& inputs = scratch.inputs;
  inputs.clear();
  for (uint32_t w : c.holders) inputs.push_back(static_cast<const float*>(c.pushes[w].data()));
  if (inputs.size() == 1) {
    optimizer_->update(params, {inputs[0], c.desc.length}, c.opt);
  } else {
    // aggregate_mean writes every element: no zero-fill of the scratch first (resize
    // value-initialises only what it adds).
    if (scratch.grad.size() < c.desc.length) scratch.grad.resize(c.desc.length);
    const std::span<float> mean(scratch.grad.data(), c.desc.length);
    aggregate_mean(mean, inputs);
    optimizer_->update(params, mean, c.opt);
  }
}

void Server::start_update(ChunkState& c) {
  c.updating = true;
  // Small chunks update inline: a hand-off to the pool and back costs more than the work.
  if (c.desc.bytes() <= kInlineUpdateBytes) {
    update_chunk(c, io_scratch_);
    complete_update(c);
    return;
  }
  by_id_.push_back(&c);
  const uint64_t id = by_id_.size() - 1;
  // The pool owns the chunk until finish_updates() sees it done.
  pool_->submit(id, [this, &c](UpdateScratch& scratch) { update_chunk(c, scratch); });
}

void Server::finish_updates() {
  pool_->take_finished(finished_ids_);
  for (uint64_t id : finished_ids_) {
    ChunkState& c = *by_id_.at(id);
    by_id_[id] = nullptr;
    complete_update(c);
  }
  while (!by_id_.empty() && by_id_.back() == nullptr) by_id_.pop_back();
}

void Server::complete_update(ChunkState& c) {
  last_progress_ = Clock::now();
  c.updating = false;
  ++c.iteration;
  ++stats_.updates;
  checkpointer_.on_update(c, chunks_);
  for (auto& m : c.pushes) m.rebuild();
  std::fill(c.arrived.begin(), c.arrived.end(), 0);
  c.arrived_count = 0;
  queue_update_replies(c);
}

void Server::reply_error(const std::string& identity, const wire::Header* about,
                         const WireError& e) {
  ++stats_.errors;
  ++stats_.errors_by_code[e.code];
  metrics_.error(error_code_name(e.code));
  log_.warn(std::string("rejected (") + error_code_name(e.code) + ")",
            "rejected " + (about ? wire::MsgType_Name(about->type()) : std::string("a message")) +
                " from " + printable(identity) + ": " + error_code_name(e.code) + ": " +
                e.message);
  // A peer that keeps sending what is refused gets a bounded number of replies.
  if (!error_budget_.allow(identity)) return;
  wire::Header h = make_header(self_, wire::ERROR);
  h.mutable_error()->set_code(static_cast<uint32_t>(e.code));
  h.mutable_error()->set_message(e.message);
  if (about) {
    h.mutable_error()->set_about(about->type());
    h.set_key(about->key());
    h.set_offset(about->offset());
    h.set_iteration(about->iteration());
    h.set_seq(about->seq());
  }
  send(identity, h);
}

}  // namespace psrt
