// GradOptimizer's group messages on the server (scheduler/grouping.h): a group PUSH carries
// several chunks, each checked like a push of its own before any is taken, and acknowledged
// once; the chunks update as usual, and the reply to each worker is one group PARAMS once every
// member holds the new iteration.
#include <algorithm>

#include "server/server.h"

namespace psrt {

void Server::on_group_push(const std::string& identity, PeerId from, const wire::Header& h,
                           std::vector<zmq::message_t>& payload) {
  // decode_header has checked the member count, the frames and their sizes. One member header
  // serves every member in turn: the group's iteration and priority (what the checks and the
  // aggregation read) and the member's chunk fields; no header copied per member.
  wire::Header& mh = member_header_;
  mh.Clear();
  mh.set_type(h.type());
  mh.set_iteration(h.iteration());
  mh.set_priority(h.priority());
  mh.set_seq(h.seq());
  const auto as_member = [&mh](const wire::GroupMember& m) -> const wire::Header& {
    mh.set_key(m.key());
    mh.set_offset(m.offset());
    mh.set_length(m.length());
    mh.set_num_elements(m.length());
    mh.set_payload_bytes(m.payload_bytes());
    mh.set_codec(m.codec());
    return mh;
  };
  std::vector<ChunkState*>& members = group_members_;
  members.clear();
  for (int i = 0; i < h.members_size(); ++i) {
    const auto& m = h.members(i);
    WireError err;
    ChunkState* c = chunks_.find(as_member(m), err);
    if (c && std::find(members.begin(), members.end(), c) != members.end()) {
      c = nullptr;
      err = {ErrorCode::kMalformed, "names chunk (" + std::to_string(m.key()) + ", " +
                                        std::to_string(m.offset()) + ") twice"};
    }
    std::optional<WireError> bad = c ? check_push(mh, *c, payload[std::size_t(i)]) : err;
    if (bad) {
      bad->message = "group member " + std::to_string(i) + " of " +
                     std::to_string(h.members_size()) + ": " + bad->message;
      reply_error(identity, &h, *bad);
      return;
    }
    members.push_back(c);
  }
  send(identity, push_ack(h));
  auto group = std::make_shared<std::vector<uint32_t>>();
  group->reserve(members.size());
  for (const ChunkState* c : members) group->push_back(c->index);
  std::sort(group->begin(), group->end());
  for (std::size_t i = 0; i < members.size(); ++i) {
    members[i]->group = group;
    accept_push(from, as_member(h.members(int(i))), *members[i], payload[i]);
  }
}

void Server::queue_group_reply(const ChunkState& c) {
  const auto group = c.group;
  uint32_t priority = c.priority;
  for (uint32_t index : *group) {
    const ChunkState& m = chunks_.at(index);
    if (m.updating || m.iteration != c.iteration) return;  // the last member to finish replies
    priority = std::min(priority, m.priority);
  }
  const ChunkState& first = chunks_.at(group->front());
  for (uint32_t w : first.holders) {  // a group's members are one stage's (model parallelism)
    PushUnit unit;
    unit.chunk = first.index;
    for (uint32_t index : *group) {
      const ChunkState& m = chunks_.at(index);
      unit.bytes += m.reply ? m.reply->size() : m.desc.bytes();
    }
    replies_[w].groups[first.index] = group;
    replies_[w].queue.add(first.desc.key, priority, {unit});
    pump_replies(w);
  }
}

void Server::send_group_params(uint32_t worker, const std::vector<uint32_t>& members,
                               uint64_t seq) {
  const ChunkState& first = chunks_.at(members.front());
  wire::Header& h = reset_header(params_out_, self_, wire::PARAMS);
  h.set_key(first.desc.key);
  h.set_offset(first.desc.offset);
  h.set_length(first.desc.length);
  h.set_iteration(first.iteration);
  h.set_seq(seq);
  std::vector<zmq::message_t> payload;
  uint64_t elements = 0;
  for (uint32_t index : members) {
    const ChunkState& c = chunks_.at(index);
    wire::Header mh;  // takes the member's codec
    if (reply_codec_) {
      payload.push_back(reply_frame(c, false, mh));
    } else {
      mh.set_codec(wire::CODEC_NONE);
      payload.push_back(shared_frame(c.params, c.params->data(), c.desc.bytes()));
    }
    auto* m = h.add_members();
    m->set_key(c.desc.key);
    m->set_offset(c.desc.offset);
    m->set_length(c.desc.length);
    m->set_payload_bytes(payload.back().size());
    m->set_codec(mh.codec());
    elements += c.desc.length;
  }
  h.set_codec(h.members(0).codec());
  h.set_num_elements(elements);
  h.set_payload_bytes(payload_size(payload));
  attach_acks(worker, h);
  send(worker_ids_[worker], h, std::move(payload));
}

}  // namespace psrt
