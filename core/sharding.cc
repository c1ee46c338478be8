#include "core/sharding.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace psrt {

ShardMap::ShardMap(const ModelDesc& model, uint32_t num_servers, uint64_t chunk_bytes) {
  if (num_servers == 0) throw std::invalid_argument("ShardMap: no servers");
  // Balance needs granularity: each server should hold at least kMinChunksPerServer chunks' worth,
  // so the chunk size is capped at total / (servers * kMinChunksPerServer).
  constexpr uint64_t kMinChunksPerServer = 16;
  const uint64_t balance_cap = num_servers == 1
                                   ? UINT64_MAX
                                   : model.total_elements() / (num_servers * kMinChunksPerServer);
  const uint64_t max_elems =
      std::max<uint64_t>(1, std::min<uint64_t>(chunk_bytes / sizeof(float),
                                               std::max<uint64_t>(balance_cap, 1024)));
  for (const auto& t : model.tensors) {
    const uint64_t n = std::max<uint64_t>(1, (t.num_elements + max_elems - 1) / max_elems);
    const uint64_t base = t.num_elements / n;
    const uint64_t extra = t.num_elements % n;  // the first `extra` chunks get one more
    uint64_t offset = 0;
    for (uint64_t i = 0; i < n; ++i) {
      ChunkDesc c;
      c.id = static_cast<uint32_t>(chunks_.size());
      c.key = t.key;
      c.offset = offset;
      c.length = base + (i < extra ? 1 : 0);
      offset += c.length;
      chunks_.push_back(c);
    }
  }
  // Longest-processing-time placement: biggest chunks first onto the least-loaded server.
  std::vector<uint32_t> order(chunks_.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return chunks_[a].length > chunks_[b].length; });
  std::vector<uint64_t> load(num_servers, 0);
  for (uint32_t id : order) {
    const auto s = static_cast<uint32_t>(std::min_element(load.begin(), load.end()) - load.begin());
    chunks_[id].server = s;
    load[s] += chunks_[id].bytes();
  }
  by_tensor_.resize(model.tensors.size());
  server_bytes_.assign(num_servers, 0);
  index();
}

ShardMap::ShardMap(std::vector<ChunkDesc> chunks, uint32_t num_tensors, uint32_t num_servers)
    : chunks_(std::move(chunks)) {
  std::sort(chunks_.begin(), chunks_.end(), [](const ChunkDesc& a, const ChunkDesc& b) {
    return a.key != b.key ? a.key < b.key : a.offset < b.offset;
  });
  for (std::size_t i = 0; i < chunks_.size(); ++i) chunks_[i].id = static_cast<uint32_t>(i);
  by_tensor_.resize(num_tensors);
  server_bytes_.assign(num_servers, 0);
  index();
}

void ShardMap::index() {
  for (const auto& c : chunks_) {
    if (c.key >= by_tensor_.size() || c.server >= server_bytes_.size()) {
      throw std::invalid_argument("ShardMap: chunk names an unknown tensor or server");
    }
    by_tensor_[c.key].push_back(c.id);
    server_bytes_[c.server] += c.bytes();
  }
}

const ChunkDesc* ShardMap::find(uint32_t key, uint64_t offset) const {
  if (key >= by_tensor_.size()) return nullptr;
  const auto& ids = by_tensor_[key];
  auto it = std::lower_bound(ids.begin(), ids.end(), offset,
                             [&](uint32_t id, uint64_t off) { return chunks_[id].offset < off; });
  if (it == ids.end() || chunks_[*it].offset != offset) return nullptr;
  return &chunks_[*it];
}

}  // namespace psrt
