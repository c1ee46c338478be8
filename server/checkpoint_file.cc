#include "server/checkpoint_file.h"

#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/byte_io.h"
#include "core/durable_file.h"

namespace psrt {

namespace {

constexpr char kMagic[8] = {'P', 'S', 'R', 'T', 'C', 'K', 'P', 'T'};

bool read_string(ByteReader& r, std::string& out) {
  const auto len = r.get<uint32_t>();
  if (r.failed() || len > r.left()) return false;
  out.resize(len);
  r.take(out.data(), len);
  return true;
}

}  // namespace

std::string checkpoint_path(const std::string& dir, const std::string& job_id, uint32_t rank,
                            uint64_t iteration) {
  return checkpoint_file(dir, job_id, "server", rank, iteration);
}

std::map<uint64_t, std::string> list_checkpoints(const std::string& dir, const std::string& job_id,
                                                 uint32_t rank) {
  return list_checkpoint_files(dir, job_id, "server", rank);
}

std::vector<uint8_t> encode_checkpoint(const ShardSnapshot& s) {
  ByteWriter w;
  w.bytes(kMagic, sizeof kMagic);
  w.put<uint32_t>(kCheckpointVersion);
  w.put<uint32_t>(uint32_t(s.job_id.size()));
  w.bytes(s.job_id.data(), s.job_id.size());
  w.put<uint32_t>(s.rank);
  w.put<uint32_t>(s.servers);
  w.put<uint32_t>(s.workers);
  w.put<uint32_t>(uint32_t(s.optimizer.size()));
  w.bytes(s.optimizer.data(), s.optimizer.size());
  w.put<uint64_t>(s.iteration);
  w.put<uint32_t>(uint32_t(s.chunks.size()));
  for (const auto& c : s.chunks) {
    w.put<uint32_t>(c.key);
    w.put<uint64_t>(c.offset);
    w.put<uint64_t>(c.length);
    w.put<uint64_t>(c.iteration);
    w.put<uint64_t>(c.opt.step);
    w.floats(c.params);
    w.floats(c.opt.m);
    w.floats(c.opt.v);
    w.floats(c.published);
  }
  w.put<uint32_t>(crc32_of(w.out()));
  return w.take();
}

Result<ShardSnapshot> decode_checkpoint(const std::vector<uint8_t>& bytes,
                                        const std::string& path) {
  auto bad = [&](const std::string& why) {
    return Status::error("checkpoint " + path + " rejected: " + why);
  };
  if (bytes.size() < sizeof kMagic + 8 || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) {
    return bad("not a psrt checkpoint (no PSRTCKPT header)");
  }
  ByteReader r(
      std::span<const uint8_t>(bytes).subspan(sizeof kMagic, bytes.size() - sizeof kMagic - 4));
  const auto version = r.get<uint32_t>();
  if (version != kCheckpointVersion && version != 1) {
    return bad("format version " + std::to_string(version) + ", this build reads version " +
               std::to_string(kCheckpointVersion));
  }
  uint32_t stored_crc = 0;
  std::memcpy(&stored_crc, bytes.data() + bytes.size() - 4, 4);
  if (crc32_of(std::span<const uint8_t>(bytes).first(bytes.size() - 4)) != stored_crc) {
    return bad("checksum mismatch (truncated or corrupt)");
  }
  ShardSnapshot s;
  if (!read_string(r, s.job_id)) return bad("truncated job id");
  s.rank = r.get<uint32_t>();
  s.servers = r.get<uint32_t>();
  s.workers = r.get<uint32_t>();
  if (version >= 2 && !read_string(r, s.optimizer)) return bad("truncated optimizer name");
  s.iteration = r.get<uint64_t>();
  const auto n = r.get<uint32_t>();
  // Each chunk takes at least 68 bytes: a count the file cannot hold is rejected unallocated.
  if (r.failed() || n > r.left() / 68)
    return bad("chunk count " + std::to_string(n) + " does not fit");
  s.chunks.resize(n);
  for (auto& c : s.chunks) {
    c.key = r.get<uint32_t>();
    c.offset = r.get<uint64_t>();
    c.length = r.get<uint64_t>();
    c.iteration = r.get<uint64_t>();
    c.opt.step = r.get<uint64_t>();
    if (!r.floats(c.params, c.length) || !r.floats(c.opt.m, c.length) ||
        !r.floats(c.opt.v, c.length) || !r.floats(c.published, c.length)) {
      return bad("chunk (" + std::to_string(c.key) + ", " + std::to_string(c.offset) +
                 ") does not fit the file");
    }
    if (c.params.size() != c.length) return bad("chunk parameters are not the chunk's length");
  }
  if (r.failed() || r.left() != 0) return bad("its contents do not match its length");
  return s;
}

Status write_checkpoint(const std::string& path, const ShardSnapshot& s) {
  const std::vector<uint8_t> bytes = encode_checkpoint(s);
  if (Status st = write_durably(path, bytes); !st)
    return Status::error("checkpoint " + st.message());
  return Status::ok();
}

Result<ShardSnapshot> read_checkpoint(const std::string& path) {
  auto bytes = read_whole_file(path, {kMagic, sizeof kMagic});  // no header: not read further
  if (!bytes) return Status::error("checkpoint " + bytes.status().message());
  return decode_checkpoint(*bytes, path);
}

}  // namespace psrt
