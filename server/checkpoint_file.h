// One server's shard on disk: parameters, optimizer state and compressed-reply state of every
// chunk it owns, at one iteration. The file is written atomically (temporary file, fsync, rename,
// fsync of the folder) and carries a format version and a CRC32 of everything before it; a file
// that is truncated, corrupt or written by another job, server or cluster shape is rejected with
// an error that names it.
//
// Layout (little-endian): "PSRTCKPT", u32 version, string job_id, u32 rank, u32 servers,
// u32 workers, string optimizer (version 2 on; optimizer.type of the job that wrote it), u64
// iteration, u32 chunk count, then per chunk u32 key, u64 offset, u64 length,
// u64 iteration, u64 optimizer step, floats params, floats m, floats v, floats published (each
// floats: u64 count then the values); last the u32 CRC32 of all bytes before it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/status.h"
#include "server/optimizer.h"

namespace psrt {

struct ChunkSnapshot {
  uint32_t key = 0;
  uint64_t offset = 0;
  uint64_t length = 0;
  uint64_t iteration = 0;
  std::vector<float> params;
  OptimizerState opt;
  std::vector<float> published;  // compression.replies: compressed only
};

struct ShardSnapshot {
  std::string job_id;
  uint32_t rank = 0;
  uint32_t servers = 0;
  uint32_t workers = 0;
  uint64_t iteration = 0;
  std::vector<ChunkSnapshot> chunks;  // in the server's chunk-table order
  std::string optimizer;  // optimizer.type of the job that wrote it; empty in a version-1 file
};

// Version 1 (no optimizer field) is still read.
inline constexpr uint32_t kCheckpointVersion = 2;

// DIR/JOB-server-RANK-ITERATION.ckpt (core/durable_file.h's checkpoint_file). Jobs sharing a
// folder do not touch each other's files.
std::string checkpoint_path(const std::string& dir, const std::string& job_id, uint32_t rank,
                            uint64_t iteration);
// That job's server `rank`'s checkpoint files in `dir` by iteration, from their names (contents
// unchecked).
std::map<uint64_t, std::string> list_checkpoints(const std::string& dir, const std::string& job_id,
                                                 uint32_t rank);

std::vector<uint8_t> encode_checkpoint(const ShardSnapshot& s);
// Checks magic, version, CRC and every length against the bytes there; errors name `path`.
Result<ShardSnapshot> decode_checkpoint(const std::vector<uint8_t>& bytes, const std::string& path);

Status write_checkpoint(const std::string& path, const ShardSnapshot& s);
Result<ShardSnapshot> read_checkpoint(const std::string& path);

}  // namespace psrt
