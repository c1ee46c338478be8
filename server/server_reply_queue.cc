// The reply path of psrt-server: one queue per worker in the push scheduler's order, released by
// that worker's byte credit (its ACKs of PARAMS), and the PARAMS messages themselves.
#include "server/server.h"

namespace psrt {

void Server::queue_reply(uint32_t worker, const ChunkState& c, bool dense) {
  PushUnit unit;
  unit.chunk = c.index;
  unit.bytes = dense || !c.reply ? c.desc.bytes() : c.reply->size();
  // A dense reply already queued sends the values as they are when it goes: a repeated PULL
  // adds nothing (a flood of them grew the queue by an entry each, without bound).
  if (dense && !replies_[worker].dense.insert(c.index).second) return;
  replies_[worker].queue.add(c.desc.key, c.priority, {unit});
  reply_soon(worker, batchable_bytes(unit.bytes, batch_bytes_) && !dense);
}

void Server::reply_soon(uint32_t worker, bool batchable) {
  // A reply that cannot join a batch goes now (with what is queued before it): a large chunk's
  // reply, updated by the pool, would otherwise wait for the pushes this pass still reads.
  if (!batchable || batch_bytes_ == 0) {
    pump_replies(worker);
    return;
  }
  ReplyLink& link = replies_[worker];
  if (!link.due) due_replies_.push_back(worker);
  link.due = true;
}

void Server::flush_replies() {
  for (const uint32_t w : due_replies_) {
    replies_[w].due = false;
    pump_replies(w);
    send_held_acks(w);  // those no reply could carry (reply credit)
  }
  due_replies_.clear();
}

void Server::pump_replies(uint32_t worker) {
  ReplyLink& link = replies_[worker];
  // Consecutive small single-chunk replies of one iteration go as one batch
  // (scheduler.batch_bytes).
  std::vector<uint32_t>& batch = reply_batch_;
  batch.clear();
  uint64_t batch_bytes = 0;
  while (auto unit = link.queue.next()) {
    const ChunkState& c = chunks_.at(unit->chunk);
    const bool grouped = link.groups.count(unit->chunk) > 0;
    const bool dense = link.dense.count(unit->chunk) > 0;
    const bool small = !grouped && !dense && batchable_bytes(unit->bytes, batch_bytes_);
    if (!batch.empty() && (!small || batch_bytes + unit->bytes > batch_bytes_ ||
                           batch.size() >= kMaxGroupMembers ||
                           chunks_.at(batch.front()).iteration != c.iteration)) {
      send_reply_batch(worker, batch, batch_bytes);
      batch_bytes = 0;
    }
    if (small) {
      batch.push_back(unit->chunk);
      batch_bytes += unit->bytes;
      continue;
    }
    const uint64_t seq = link.credit.send({unit->bytes, unit->chunk, {}, {}});
    if (grouped) {
      auto group = link.groups.find(unit->chunk);
      send_group_params(worker, *group->second, seq);
      link.groups.erase(group);
      continue;
    }
    link.dense.erase(unit->chunk);
    send_params(worker, c, seq, dense);
  }
  if (!batch.empty()) send_reply_batch(worker, batch, batch_bytes);
}

void Server::send_reply_batch(uint32_t worker, std::vector<uint32_t>& chunks, uint64_t bytes) {
  ReplyLink& link = replies_[worker];
  const uint64_t seq = link.credit.send({bytes, chunks.front(), {}, {}});
  if (chunks.size() == 1) {
    send_params(worker, chunks_.at(chunks.front()), seq, false);
  } else {
    send_group_params(worker, chunks, seq);
  }
  chunks.clear();
}

void Server::on_reply_ack(uint32_t worker, const wire::Header& h) {
  ReplyLink& link = replies_[worker];
  // `seq` and any further replies the worker acknowledges at once (Header.acks).
  for (int i = -1; i < h.acks_size(); ++i) {
    const uint64_t seq = i < 0 ? h.seq() : h.acks(i);
    const auto sent = link.credit.acked(seq);
    if (!sent) {
      reply_error(worker_ids_[worker], &h,
                  {ErrorCode::kUnexpected,
                   "ACK for reply " + std::to_string(seq) + ", which is not in flight"});
      break;
    }
    link.queue.acked(sent->bytes);
  }
  pump_replies(worker);
}

void Server::attach_acks(uint32_t worker, wire::Header& h) {
  std::vector<uint64_t>& held = replies_[worker].held_acks;
  for (uint64_t seq : held) h.add_acks(seq);
  held.clear();
}

void Server::send_held_acks(uint32_t worker) {
  ReplyLink& link = replies_[worker];
  if (link.held_acks.empty()) return;
  send(worker_ids_[worker],
       acks_header(ack_out_, self_, *link.held_about, link.held_iteration, link.held_acks));
  link.held_acks.clear();
}

wire::Header& Server::params_header() {
  wire::Header& h = reset_header(params_out_, self_, wire::PARAMS);
  if (grouping_choice_ > 0) {
    h.set_grouping_choice(grouping_choice_);
    h.set_grouping_from(grouping_from_);
  }
  return h;
}

void Server::send_params(uint32_t worker, const ChunkState& c, uint64_t seq, bool dense) {
  wire::Header& h = params_header();
  h.set_key(c.desc.key);
  h.set_offset(c.desc.offset);
  h.set_length(c.desc.length);
  h.set_iteration(c.iteration);
  h.set_num_elements(c.desc.length);
  h.set_seq(seq);
  std::vector<zmq::message_t> payload;
  if (reply_codec_) {
    payload.push_back(reply_frame(c, dense, h));
  } else {
    h.set_codec(wire::CODEC_NONE);
    payload.push_back(shared_frame(c.params, c.params->data(), c.desc.bytes()));
  }
  h.set_payload_bytes(payload.back().size());
  attach_acks(worker, h);
  send(worker_ids_[worker], h, std::move(payload));
}

}  // namespace psrt
