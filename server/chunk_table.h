// The chunks one server owns: their parameters, optimizer state and the pushes collected for the
// current iteration. Only the I/O thread touches a chunk, except while it is `updating`, when the
// update pool owns it.
#pragma once

#include <zmq.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "compress/codec.h"
#include "core/sharding.h"
#include "core/wire.h"
#include "server/optimizer.h"

namespace psrt {

// A group push's chunks (indices, ascending), shared by its members.
using ChunkGroup = std::shared_ptr<const std::vector<uint32_t>>;

struct ChunkState {
  ChunkDesc desc;
  uint32_t index = 0;     // position in ChunkTable::at()
  uint32_t priority = 0;  // from the workers' pushes; the tensor key until then
  // Shared with ZeroMQ while replies are in flight; replaced (copy-on-write) when still shared.
  std::shared_ptr<std::vector<float>> params;
  OptimizerState opt;
  uint64_t iteration = 0;  // version of `params`; pushes are collected for this iteration
  bool initialized = false;
  bool updating = false;
  // The workers that push this chunk and get its replies, ascending: every worker, or with
  // model parallelism those holding its layer (one per replica). The first one initialises it.
  std::vector<uint32_t> holders;
  std::vector<uint8_t> held;           // by worker rank
  bool held_by(uint32_t worker) const { return worker < held.size() && held[worker]; }
  std::vector<zmq::message_t> pushes;  // by worker rank
  std::vector<uint8_t> arrived;        // by worker rank
  uint32_t arrived_count = 0;
  // compression.replies: compressed. `published` is what every worker holds; each update is
  // sent as `reply`, the encoding of params - published (published then adds what it decodes
  // to), so what the encoding leaves out stays in the next difference.
  std::vector<float> published;
  std::unique_ptr<compress::CodecState> reply_state;
  std::shared_ptr<const std::vector<uint8_t>> reply;  // of the last update; null: send dense
  // Reused by encode_reply from update to update: the change, and the payload's buffer once no
  // frame of an earlier reply holds it.
  std::vector<float> reply_change;
  std::shared_ptr<std::vector<uint8_t>> reply_buffer;
  // By worker rank: the group (chunk indices, ascending) in which that worker pushed this chunk
  // for the current iteration; null when pushed alone. Each worker's reply is grouped as its own
  // push was, so workers that group differently (mid-switch, or by their own choice) never wait
  // on a reply shaped for another.
  std::vector<ChunkGroup> groups;
};

class ChunkTable {
 public:
  ChunkTable() = default;
  // `stages`: who holds which tensors (empty: every worker holds every tensor).
  ChunkTable(uint32_t self_rank, uint32_t workers, const wire::Membership& membership,
             const wire::StageMap& stages = {});

  // The chunk that `h` (key, offset, length) names, if this server owns it; else an error.
  ChunkState* find(const wire::Header& h, WireError& error);
  ChunkState& at(uint32_t index) { return *by_index_.at(index); }
  std::size_t size() const { return chunks_.size(); }
  uint64_t bytes() const;
  uint32_t workers() const { return workers_; }
  bool all_initialized() const;

 private:
  uint32_t self_ = 0;
  uint32_t workers_ = 0;
  std::map<std::pair<uint32_t, uint64_t>, ChunkState> chunks_;  // by (key, offset)
  std::vector<ChunkState*> by_index_;  // map nodes are stable, also when the table moves
  std::map<uint32_t, uint64_t> tensor_sizes_;
};

// Returns the payload frame as 4-byte aligned floats: the frame itself when it is aligned, else an
// aligned copy (ZeroMQ may hand out frames at any offset of its receive buffer).
zmq::message_t aligned_frame(zmq::message_t frame);

}  // namespace psrt
