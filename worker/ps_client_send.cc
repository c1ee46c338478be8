// PsClient, I/O-thread side of the push: the scheduler's units onto the wire, each alone, as
// GradOptimizer's groups (scheduler/grouping.h) or gathered into batches (scheduler.batch_bytes),
// with small members packed into shared frames (core/group_frames.h).
#include <algorithm>

#include "worker/ps_client.h"

namespace psrt {

namespace {
using SteadyClock = std::chrono::steady_clock;
}  // namespace

std::span<const uint8_t> PsClient::payload_of(uint32_t chunk) const {
  const ChunkDesc& c = shards_.chunks()[chunk];
  const Command& cmd = pending_.at(c.key);
  if (cmd.payloads.empty()) {
    return {reinterpret_cast<const uint8_t*>(cmd.values + c.offset), c.bytes()};
  }
  // Chunk ids of a tensor are consecutive, in offset order.
  const auto& p = cmd.payloads[chunk - shards_.tensor_chunks(c.key).front()];
  return {p->data(), p->size()};
}

zmq::message_t PsClient::payload_frame(uint32_t chunk) const {
  const ChunkDesc& c = shards_.chunks()[chunk];
  const Command& cmd = pending_.at(c.key);
  if (cmd.payloads.empty()) {
    // Codec none: the gradient itself (a compressed command has a payload per chunk, no grad).
    return shared_frame(cmd.grad, cmd.values + c.offset, c.bytes());
  }
  const auto& p = cmd.payloads[chunk - shards_.tensor_chunks(c.key).front()];
  return shared_frame(p, p->data(), p->size());
}

void PsClient::pump() {
  // Small single-chunk messages the queue releases back to back gather per server and leave as
  // one batch (scheduler.batch_bytes); anything else first sends what has gathered, so the mode's
  // order holds on every link. Nothing waits: what gathered leaves when the queue stops giving.
  while (auto unit = queue_.next()) {
    const PlannedMessage& m = plan_.messages()[unit->chunk];
    const ChunkDesc& c = shards_.chunks()[m.chunks.front()];
    if (m.chunks.size() > 1 || !batchable_bytes(unit->bytes, batch_bytes_)) {
      send_batches();
      send_push(m.chunks, unit->priority, unit->bytes, false);
      continue;
    }
    PushBatch& b = batches_.at(c.server);
    const uint64_t iteration = pending_.at(c.key).iteration;
    if (!b.chunks.empty() && (b.bytes + unit->bytes > batch_bytes_ ||
                              b.chunks.size() >= kMaxGroupMembers || b.iteration != iteration)) {
      send_batch(b);
    }
    b.chunks.push_back(c.id);
    b.bytes += unit->bytes;
    b.priority = std::min(b.priority, unit->priority);
    b.iteration = iteration;
  }
  send_batches();
}

void PsClient::send_batches() {
  for (PushBatch& b : batches_) {
    if (!b.chunks.empty()) send_batch(b);
  }
}

void PsClient::send_batch(PushBatch& b) {
  send_push(b.chunks, b.priority, b.bytes, b.chunks.size() > 1);
  b.chunks.clear();
  b.bytes = 0;
  b.priority = UINT32_MAX;
}

void PsClient::send_push(const std::vector<uint32_t>& chunks, uint32_t priority, uint64_t bytes,
                         bool batch) {
  const ChunkDesc& c = shards_.chunks()[chunks.front()];
  const Command& cmd = pending_.at(c.key);
  wire::Header& h = tensor_header(push_out_, wire::PUSH, c, cmd.iteration);
  h.set_priority(priority);  // a group's or a batch's: its most urgent member's
  h.set_batch(batch);
  if (announce_choice_ > 0) {  // worker 0's choice after the grouping trials (ps_client_push.cc)
    h.set_grouping_choice(announce_choice_);
    h.set_grouping_from(announce_from_);
  }
  if (!cmd.payloads.empty()) h.set_codec(encoder_.wire_codec());
  std::vector<zmq::message_t> payload;
  uint64_t elements = 0;
  if (chunks.size() == 1) {
    payload.push_back(payload_frame(c.id));
    elements = c.length;
  } else {
    for (uint32_t id : chunks) {
      const ChunkDesc& member = shards_.chunks()[id];
      elements += member.length;
      auto* gm = h.add_members();
      gm->set_key(member.key);
      gm->set_offset(member.offset);
      gm->set_length(member.length);
      gm->set_payload_bytes(payload_of(id).size());
      gm->set_codec(h.codec());
    }
    payload = group_frames_.build(
        h, chunks.size(), [&](std::size_t i) { return payload_of(chunks[i]); },
        [&](std::size_t i) { return payload_frame(chunks[i]); });
  }
  h.set_num_elements(elements);
  h.set_payload_bytes(payload_size(payload));
  const auto now = SteadyClock::now();
  pushes_.sent(h.seq(), {bytes, c.id, cmd.enqueued, now, cmd.iteration});
  metrics_.queue_wait(std::chrono::duration<double>(now - cmd.enqueued).count());
  send_to(c.server, h, std::move(payload));
  // The frames share the gradient now: a command whose chunks are all out is dropped, so its copy
  // lives until ZeroMQ has written it, not until the next iteration's push of the tensor.
  for (uint32_t id : chunks) {
    const auto it = pending_.find(shards_.chunks()[id].key);
    if (it != pending_.end() && --it->second.unsent == 0) pending_.erase(it);
  }
  std::lock_guard lock(mu_);
  stats_.bytes_pushed += bytes;
  stats_.chunks_pushed += chunks.size();
}

}  // namespace psrt
