// Chunks and their placement on servers. A chunk is a contiguous slice of one tensor of at most
// chunk_bytes; it is the unit of transfer, aggregation and reply. Chunks are spread over the
// servers so that each holds about the same number of bytes.
#pragma once

#include <cstdint>
#include <vector>

#include "core/mode.h"
#include "core/model.h"

namespace psrt {

// No chunk is larger than this, in any mode. ZeroMQ 4.3 moves messages of tens of MiB very slowly
// (psrt-bench-transport's raw ZeroMQ column: a 64 MB echo takes over ten times plain TCP's time),
// while a run of 4 MiB messages streams; it also bounds what one message from a peer can make a
// process allocate (see core/wire.h).
constexpr uint64_t kMaxChunkBytes = 4ull << 20;
// A group message (several chunks in one PUSH or PARAMS, scheduler/grouping.h) holds at most this
// many members and dense bytes (room left for codec headers within one message's payload limit).
constexpr uint32_t kMaxGroupMembers = 256;
constexpr uint64_t kMaxGroupBytes = kMaxChunkBytes / 2;
// Adaptive batching (scheduler.batch_bytes): a single-chunk message of `bytes` may join a batch
// when it is at most half of batch_bytes (0: batching off). The workers' pushes, the servers'
// replies and psrt-sim all ask this.
constexpr bool batchable_bytes(uint64_t bytes, uint64_t batch_bytes) {
  return 2 * bytes <= batch_bytes;
}

struct ChunkDesc {
  uint32_t id = 0;       // index in ShardMap::chunks
  uint32_t key = 0;      // tensor key (its priority: forward-order index)
  uint64_t offset = 0;   // first element in the tensor
  uint64_t length = 0;   // elements
  uint32_t server = 0;   // owning server rank
  uint64_t bytes() const { return length * sizeof(float); }
};

class ShardMap {
 public:
  ShardMap() = default;
  // Splits every tensor into ceil(bytes / chunk_bytes) near-equal chunks and places them, largest
  // first, on the least-loaded server; then, while the busiest server holds more than 1.05x the
  // least busy one, halves the largest chunk (down to 8 KiB) and places again.
  ShardMap(const ModelDesc& model, uint32_t num_servers, uint64_t chunk_bytes);
  // Rebuilds a map from an explicit chunk list (as received in the membership).
  ShardMap(std::vector<ChunkDesc> chunks, uint32_t num_tensors, uint32_t num_servers);

  const std::vector<ChunkDesc>& chunks() const { return chunks_; }
  const std::vector<uint32_t>& tensor_chunks(uint32_t key) const { return by_tensor_[key]; }
  uint32_t num_tensors() const { return static_cast<uint32_t>(by_tensor_.size()); }
  uint32_t num_servers() const { return static_cast<uint32_t>(server_bytes_.size()); }
  const std::vector<uint64_t>& server_bytes() const { return server_bytes_; }
  // The chunk of `key` that starts at `offset`, or nullptr.
  const ChunkDesc* find(uint32_t key, uint64_t offset) const;

 private:
  void index();

  std::vector<ChunkDesc> chunks_;  // in (key, offset) order
  std::vector<std::vector<uint32_t>> by_tensor_;
  std::vector<uint64_t> server_bytes_;
};

}  // namespace psrt
