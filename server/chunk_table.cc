#include "server/chunk_table.h"

#include <cstring>

namespace psrt {

ChunkTable::ChunkTable(uint32_t self_rank, uint32_t workers, const wire::Membership& membership,
                       const wire::StageMap& stages)
    : self_(self_rank), workers_(workers) {
  std::map<uint32_t, std::vector<uint32_t>> holders;  // by key; only with stages
  for (int w = 0; w < stages.workers_size(); ++w) {
    for (uint32_t key : stages.workers(w).keys()) holders[key].push_back(uint32_t(w));
  }
  for (const auto& t : membership.tensors()) tensor_sizes_[t.key()] = t.num_elements();
  for (const auto& c : membership.chunks()) {
    if (c.server() != self_) continue;
    ChunkState s;
    s.desc.key = c.key();
    s.desc.offset = c.offset();
    s.desc.length = c.length();
    s.desc.server = c.server();
    s.params = std::make_shared<std::vector<float>>(c.length(), 0.0f);
    s.pushes.resize(workers);
    s.arrived.assign(workers, 0);
    s.groups.resize(workers);
    if (stages.workers_size() == 0) {
      s.held.assign(workers, 1);
      for (uint32_t w = 0; w < workers; ++w) s.holders.push_back(w);
    } else {
      s.held.assign(workers, 0);
      s.holders = holders[c.key()];
      for (uint32_t w : s.holders) s.held.at(w) = 1;
    }
    s.priority = c.key();
    chunks_.emplace(std::make_pair(c.key(), c.offset()), std::move(s));
  }
  for (auto& [k, c] : chunks_) {
    c.index = uint32_t(by_index_.size());
    by_index_.push_back(&c);
  }
}

ChunkState* ChunkTable::find(const wire::Header& h, WireError& error) {
  auto ts = tensor_sizes_.find(h.key());
  if (ts == tensor_sizes_.end()) {
    error = {ErrorCode::kUnknownChunk, "no tensor with key " + std::to_string(h.key())};
    return nullptr;
  }
  auto it = chunks_.find({h.key(), h.offset()});
  if (it == chunks_.end()) {
    error = {ErrorCode::kUnknownChunk, "tensor " + std::to_string(h.key()) +
                                           " has no chunk at offset " + std::to_string(h.offset()) +
                                           " on server " + std::to_string(self_)};
    return nullptr;
  }
  if (it->second.desc.length != h.length()) {
    error = {ErrorCode::kBadSize, "chunk (" + std::to_string(h.key()) + ", " +
                                      std::to_string(h.offset()) + ") has " +
                                      std::to_string(it->second.desc.length) + " elements, not " +
                                      std::to_string(h.length())};
    return nullptr;
  }
  return &it->second;
}

uint64_t ChunkTable::bytes() const {
  uint64_t n = 0;
  for (const auto& [k, c] : chunks_) n += c.desc.bytes();
  return n;
}

bool ChunkTable::all_initialized() const {
  for (const auto& [k, c] : chunks_)
    if (!c.initialized) return false;
  return true;
}

zmq::message_t aligned_frame(zmq::message_t frame) {
  if (reinterpret_cast<uintptr_t>(frame.data()) % alignof(float) == 0) return frame;
  zmq::message_t copy(frame.size());
  std::memcpy(copy.data(), frame.data(), frame.size());
  return copy;
}

}  // namespace psrt
