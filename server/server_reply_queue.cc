// The reply path of psrt-server: one queue per worker in the push scheduler's order, released by
// that worker's byte credit (its ACKs of PARAMS), and the PARAMS messages themselves.
#include "server/server.h"

namespace psrt {

void Server::queue_reply(uint32_t worker, const ChunkState& c, bool dense) {
  PushUnit unit;
  unit.chunk = c.index;
  unit.bytes = dense || !c.reply ? c.desc.bytes() : c.reply->size();
  if (dense) replies_[worker].dense.insert(c.index);
  replies_[worker].queue.add(c.desc.key, c.priority, {unit});
  pump_replies(worker);
}

void Server::pump_replies(uint32_t worker) {
  ReplyLink& link = replies_[worker];
  while (auto unit = link.queue.next()) {
    const uint64_t seq = link.credit.send({unit->bytes, unit->chunk, {}, {}});
    auto group = link.groups.find(unit->chunk);
    if (group != link.groups.end()) {
      send_group_params(worker, *group->second, seq);
      link.groups.erase(group);
      continue;
    }
    const bool dense = link.dense.erase(unit->chunk) > 0;
    send_params(worker, chunks_.at(unit->chunk), seq, dense);
  }
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
  std::optional<uint64_t>& held = replies_[worker].held_ack;
  if (held) h.add_acks(*held);
  held.reset();
}

void Server::send_params(uint32_t worker, const ChunkState& c, uint64_t seq, bool dense) {
  wire::Header& h = reset_header(params_out_, self_, wire::PARAMS);
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
