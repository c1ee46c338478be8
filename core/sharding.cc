#include "core/sharding.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <queue>
#include <utility>
#include <stdexcept>

namespace psrt {

namespace {

// Longest-processing-time placement: biggest chunks first onto the least-loaded server (ties:
// lowest rank). Returns the servers' loads in bytes.
std::vector<uint64_t> place(std::vector<ChunkDesc>& chunks, uint32_t num_servers) {
  std::vector<uint32_t> order(chunks.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return chunks[a].length > chunks[b].length; });
  // The least-loaded server from a heap of (load, rank): what a scan for the first minimum
  // finds, in O(log servers) instead of O(servers) per chunk (a placer's request may name
  // 100000 servers).
  std::vector<uint64_t> load(num_servers, 0);
  using Entry = std::pair<uint64_t, uint32_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> least;
  for (uint32_t s = 0; s < num_servers && s < order.size(); ++s) least.push({0, s});
  for (uint32_t id : order) {
    const uint32_t s = least.top().second;
    least.pop();
    chunks[id].server = s;
    load[s] += chunks[id].bytes();
    least.push({load[s], s});
  }
  return load;
}

}  // namespace

ShardMap::ShardMap(const ModelDesc& model, uint32_t num_servers, uint64_t chunk_bytes) {
  if (num_servers == 0) throw std::invalid_argument("ShardMap: no servers");
  const uint64_t max_elems = std::max<uint64_t>(1, chunk_bytes / sizeof(float));
  std::vector<ChunkDesc> chunks;
  for (const auto& t : model.tensors) {
    const uint64_t n = std::max<uint64_t>(1, (t.num_elements + max_elems - 1) / max_elems);
    const uint64_t base = t.num_elements / n;
    const uint64_t extra = t.num_elements % n;  // the first `extra` chunks get one more
    uint64_t offset = 0;
    for (uint64_t i = 0; i < n; ++i) {
      ChunkDesc c;
      c.key = t.key;
      c.offset = offset;
      c.length = base + (i < extra ? 1 : 0);
      offset += c.length;
      chunks.push_back(c);
    }
  }
  // Balance: while the busiest server holds more than kTolerance times the least busy one, halve
  // the largest chunk and place again. Small models end with few messages, big tensors get split
  // only as far as balance needs.
  constexpr double kTolerance = 1.05;
  constexpr uint64_t kMinSplitElements = 2048;
  for (int round = 0; round < 100000; ++round) {
    const auto load = place(chunks, num_servers);
    const uint64_t hi = *std::max_element(load.begin(), load.end());
    const uint64_t lo = *std::min_element(load.begin(), load.end());
    if (double(hi) <= kTolerance * double(lo)) break;
    auto big = std::max_element(
        chunks.begin(), chunks.end(),
        [](const ChunkDesc& a, const ChunkDesc& b) { return a.length < b.length; });
    if (big->length < 2 * kMinSplitElements) break;
    ChunkDesc second = *big;
    big->length /= 2;
    second.offset = big->offset + big->length;
    second.length -= big->length;
    chunks.push_back(second);
  }
  *this = ShardMap(std::move(chunks), uint32_t(model.tensors.size()), num_servers);
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
