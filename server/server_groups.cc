// GradOptimizer's group messages on the server (scheduler/grouping.h): a group PUSH carries
// several chunks, each checked like a push of its own before any is taken, and acknowledged
// once; the chunks update as usual, and the reply to each worker is one group PARAMS once every
// member holds the new iteration. Replies follow each worker's own groups: workers need not
// group alike (tests/integration/group_mix_test.cc).
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
  std::vector<ChunkState*>& members = group_members_;
  members.clear();
  // Each member's bytes as a frame of its own: the frame itself where the member has one, a copy
  // of its bytes out of a packed frame (core/group_frames.h) otherwise.
  member_payloads(h, payload, member_bytes_);
  std::vector<zmq::message_t>& frames = member_frames_;
  frames.clear();
  for (int i = 0; i < h.members_size(); ++i) {
    const auto& bytes = member_bytes_[std::size_t(i)];
    zmq::message_t& whole = payload[h.members(i).frame()];
    if (bytes.size() == whole.size() && bytes.data() == whole.data()) {
      frames.push_back(std::move(whole));
    } else {
      frames.emplace_back(bytes.data(), bytes.size());
    }
  }
  const auto refuse = [&](int i, WireError err) {
    err.message = "group member " + std::to_string(i) + " of " + std::to_string(h.members_size()) +
                  ": " + err.message;
    reply_error(identity, &h, err);
  };
  // Which chunks first: each found, named once, and held by the sender (a member of another
  // stage's tensor was aggregated as if its holders had pushed: the server read pushes they never
  // sent, and crashed); then each member's push checked as if it came alone.
  for (int i = 0; i < h.members_size(); ++i) {
    const auto& m = h.members(i);
    WireError err;
    ChunkState* c = chunks_.find(member_header(m), err);
    if (c && std::find(members.begin(), members.end(), c) != members.end()) {
      c = nullptr;
      err = {ErrorCode::kMalformed, "names chunk (" + std::to_string(m.key()) + ", " +
                                        std::to_string(m.offset()) + ") twice"};
    } else if (c && !c->held_by(from.rank)) {
      c = nullptr;
      err = not_held(from, m.key());
    }
    if (!c) return refuse(i, err);
    members.push_back(c);
  }
  for (int i = 0; i < h.members_size(); ++i) {
    member_header(h.members(i));
    if (auto bad = check_push(mh, *members[std::size_t(i)], frames[std::size_t(i)])) {
      return refuse(i, *bad);
    }
  }
  if (h.batch()) {
    take_batch(identity, from, h);
    return;
  }
  send(identity, push_ack(h));
  auto group = std::make_shared<std::vector<uint32_t>>();
  group->reserve(members.size());
  for (const ChunkState* c : members) group->push_back(c->index);
  std::sort(group->begin(), group->end());
  for (std::size_t i = 0; i < members.size(); ++i) {
    accept_push(from, member_header(h.members(int(i))), *members[i], frames[i], group);
  }
}

const wire::Header& Server::member_header(const wire::GroupMember& m) {
  wire::Header& mh = member_header_;
  mh.set_key(m.key());
  mh.set_offset(m.offset());
  mh.set_length(m.length());
  mh.set_num_elements(m.length());
  mh.set_payload_bytes(m.payload_bytes());
  mh.set_codec(m.codec());
  return mh;
}

void Server::take_batch(const std::string& identity, PeerId from, const wire::Header& h) {
  // Each member as if pushed alone; the ACK rides on the replies when every member completes
  // its chunk in the I/O thread (server_data.cc, on_push).
  const std::vector<ChunkState*>& members = group_members_;
  bool fold = true;
  for (const ChunkState* c : members) fold = fold && completes_inline(from, *c);
  if (fold) {
    hold_ack(from.rank, h, *members.front());
  } else {
    send(identity, push_ack(h));
  }
  for (std::size_t i = 0; i < members.size(); ++i) {
    accept_push(from, member_header(h.members(int(i))), *members[i], member_frames_[i]);
  }
  if (batch_bytes_ == 0) send_held_acks(from.rank);
}

void Server::queue_update_replies(const ChunkState& c) {
  for (uint32_t w : c.holders) {
    if (c.groups[w]) {
      queue_group_reply(c, w);
    } else {
      queue_reply(w, c);
    }
  }
}

void Server::queue_group_reply(const ChunkState& c, uint32_t worker) {
  // `worker` pushed every member in this group for this iteration, so none can move on before
  // this reply: the last member to finish its update replies.
  const ChunkGroup group = c.groups[worker];
  uint32_t priority = c.priority;
  PushUnit unit;
  unit.chunk = group->front();
  for (uint32_t index : *group) {
    const ChunkState& m = chunks_.at(index);
    if (m.updating || m.iteration != c.iteration) return;
    priority = std::min(priority, m.priority);
    unit.bytes += m.reply ? m.reply->size() : m.desc.bytes();
  }
  ReplyLink& link = replies_[worker];
  link.groups[unit.chunk] = group;
  link.queue.add(chunks_.at(unit.chunk).desc.key, priority, {unit});
  reply_soon(worker, false);  // a group goes as it is
}

void Server::send_group_params(uint32_t worker, const std::vector<uint32_t>& members,
                               uint64_t seq) {
  const ChunkState& first = chunks_.at(members.front());
  wire::Header& h = params_header();
  h.set_key(first.desc.key);
  h.set_offset(first.desc.offset);
  h.set_length(first.desc.length);
  h.set_iteration(first.iteration);
  h.set_seq(seq);
  // With compressed replies each member's encoded change as a frame first; dense values are read
  // where they are. Then the group's frames: small members packed (core/group_frames.h), large
  // dense ones without a copy.
  std::vector<zmq::message_t>& encoded = reply_member_frames_;
  encoded.clear();
  uint64_t elements = 0;
  for (uint32_t index : members) {
    const ChunkState& c = chunks_.at(index);
    wire::Header mh;  // takes the member's codec
    mh.set_codec(wire::CODEC_NONE);
    if (reply_codec_) encoded.push_back(reply_frame(c, false, mh));
    auto* m = h.add_members();
    m->set_key(c.desc.key);
    m->set_offset(c.desc.offset);
    m->set_length(c.desc.length);
    m->set_payload_bytes(reply_codec_ ? encoded.back().size() : c.desc.bytes());
    m->set_codec(mh.codec());
    elements += c.desc.length;
  }
  const auto bytes = [&](std::size_t i) -> std::span<const uint8_t> {
    if (reply_codec_) return {static_cast<const uint8_t*>(encoded[i].data()), encoded[i].size()};
    const ChunkState& c = chunks_.at(members[i]);
    return {reinterpret_cast<const uint8_t*>(c.params->data()), c.desc.bytes()};
  };
  const auto frame = [&](std::size_t i) {
    if (reply_codec_) return std::move(encoded[i]);
    const ChunkState& c = chunks_.at(members[i]);
    return shared_frame(c.params, c.params->data(), c.desc.bytes());
  };
  std::vector<zmq::message_t> payload = group_frames_.build(h, members.size(), bytes, frame);
  h.set_codec(h.members(0).codec());
  h.set_num_elements(elements);
  h.set_payload_bytes(payload_size(payload));
  attach_acks(worker, h);
  send(worker_ids_[worker], h, std::move(payload));
}

}  // namespace psrt
