// Compressed parameter replies (compression.replies: compressed). Every worker holds the same
// values, `published`; after an update the server encodes params - published with the job's codec
// (without error feedback: published only moves by what was sent, so the part left out stays in
// the next difference), adds the decoded payload to published, and sends that one payload to every
// worker, which adds it to its copy. A worker's first values (its PULL) come dense, and are
// `published`, not the server's params, so that the workers' copies stay equal.
#include <spdlog/spdlog.h>

#include <atomic>

#include "server/server.h"

namespace psrt {

void Server::publish_initial(ChunkState& c) {
  c.published = *c.params;
  c.reply_state = reply_codec_->make_state(
      compress::TensorInfo{.num_elements = int64_t(c.desc.length), .layer = 0, .num_layers = 1});
  c.reply.reset();
}

void Server::publish_restored(ChunkState& c) {
  std::vector<float> published = std::move(c.published);
  publish_initial(c);  // a fresh codec state: the reply codec's own state is not checkpointed
  if (published.size() == c.desc.length) c.published = std::move(published);
}

void Server::encode_reply(ChunkState& c) {
  const std::vector<float>& now = *c.params;
  std::vector<float>& change = c.reply_change;
  change.resize(now.size());
  for (std::size_t i = 0; i < now.size(); ++i) change[i] = now[i] - c.published[i];
  c.reply.reset();  // frames of the last reply still queued keep their own references
  if (!c.reply_buffer || c.reply_buffer.use_count() > 1) {
    c.reply_buffer = std::make_shared<std::vector<uint8_t>>();
  } else {
    // The last frame that held the buffer has been released (ZeroMQ is done reading it).
    std::atomic_thread_fence(std::memory_order_acquire);
    c.reply_buffer->clear();
  }
  std::shared_ptr<std::vector<uint8_t>> payload = c.reply_buffer;
  const compress::ChunkInput in{.offset = 0, .values = change, .iteration = int64_t(c.iteration)};
  Status st = reply_codec_->encode(*c.reply_state, in, *payload);
  if (st) st = reply_codec_->decode_accumulate(*payload, c.published, 1.0f);
  if (!st) {
    // A NaN or an infinity in the values (a diverging run): send them dense, as they are.
    spdlog::warn("tensor {} offset {}: reply not compressed ({}); sent dense", c.desc.key,
                 c.desc.offset, st.message());
    c.published = now;
    c.reply.reset();
    return;
  }
  c.reply = std::move(payload);
}

zmq::message_t Server::reply_frame(const ChunkState& c, bool dense, wire::Header& h) const {
  if (!dense && c.reply) {
    h.set_codec(wire_codec_);
    return shared_frame(c.reply, c.reply->data(), c.reply->size());
  }
  // A copy: `published` changes with the next update while ZeroMQ may still hold the frame.
  h.set_codec(wire::CODEC_NONE);
  auto copy = std::make_shared<const std::vector<float>>(c.published);
  return shared_frame(copy, copy->data(), c.desc.bytes());
}

}  // namespace psrt
