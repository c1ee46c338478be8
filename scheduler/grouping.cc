#include "scheduler/grouping.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <stdexcept>

namespace psrt {

Grouping Grouping::singletons(uint32_t tensors) {
  std::vector<uint32_t> starts(tensors);
  for (uint32_t k = 0; k < tensors; ++k) starts[k] = k;
  return from_starts(std::move(starts), tensors);
}

Grouping Grouping::from_starts(std::vector<uint32_t> starts, uint32_t tensors) {
  if (tensors == 0 || starts.empty() || starts[0] != 0) {
    throw std::invalid_argument("grouping: the first group must start at key 0");
  }
  for (std::size_t i = 1; i < starts.size(); ++i) {
    if (starts[i] <= starts[i - 1] || starts[i] >= tensors) {
      throw std::invalid_argument("grouping: group starts must be ascending keys of the model");
    }
  }
  Grouping g;
  g.starts_ = std::move(starts);
  g.group_of_.resize(tensors);
  for (uint32_t i = 0; i < g.num_groups(); ++i) {
    for (uint32_t k = g.begin(i); k < g.end(i); ++k) g.group_of_[k] = i;
  }
  return g;
}

std::string Grouping::describe(const ModelDesc& model, std::size_t max) const {
  std::string out =
      std::to_string(num_groups()) + " groups of " + std::to_string(num_tensors()) + " tensors:";
  for (uint32_t g = 0; g < num_groups() && g < max; ++g) {
    uint64_t bytes = 0;
    for (uint32_t k = begin(g); k < end(g); ++k) bytes += model.tensors[k].num_elements * 4;
    char buf[80];
    if (end(g) - begin(g) == 1) {
      std::snprintf(buf, sizeof buf, " %u (%.3g KB)", begin(g), double(bytes) / 1e3);
    } else {
      std::snprintf(buf, sizeof buf, " %u-%u (%.3g KB)", begin(g), end(g) - 1, double(bytes) / 1e3);
    }
    out += buf;
  }
  if (num_groups() > max) out += " ...";
  return out;
}

std::vector<double> backward_ready_ms(const ModelDesc& model) {
  std::vector<double> ready(model.tensors.size(), 0);
  double t = 0;
  for (std::size_t l = model.layers.size(); l-- > 0;) {
    t += model.layers[l].backward_ms;
    for (uint32_t k : model.layers[l].tensors) ready[k] = t;
  }
  return ready;
}

namespace {

// Walks keys in backward order (descending); `close(key, group_bytes, group_size)` says whether
// the group that now holds `key` ends after it.
template <typename Close>
Grouping walk(const ModelDesc& model, Close close) {
  const auto n = static_cast<uint32_t>(model.tensors.size());
  std::vector<uint32_t> starts;
  uint64_t bytes = 0;
  uint32_t size = 0, index = 0;
  for (uint32_t k = n; k-- > 0;) {
    bytes += model.tensors[k].num_elements * 4;
    ++size;
    if (k == 0 || close(k, bytes, size, index)) {
      starts.push_back(k);
      bytes = 0;
      size = 0;
      ++index;
    }
  }
  std::reverse(starts.begin(), starts.end());
  return Grouping::from_starts(std::move(starts), n);
}

}  // namespace

Grouping static_grouping(const ModelDesc& model, const GroupingSpec& spec) {
  const auto n = static_cast<uint32_t>(model.tensors.size());
  using Kind = GroupingSpec::Kind;
  switch (spec.kind) {
    case Kind::kNone:
      return Grouping::singletons(n);
    case Kind::kSize:
      return walk(model, [&](uint32_t, uint64_t b, uint32_t, uint32_t) { return b >= spec.bytes; });
    case Kind::kDdp:
      return walk(model, [&](uint32_t, uint64_t b, uint32_t, uint32_t index) {
        return b >= (index == 0 ? spec.first_bytes : spec.bytes);
      });
    case Kind::kHorovod: {
      // Each tensor leaves at the first cycle tick at or after it is ready; what leaves at one
      // tick is fused in backward order up to the threshold.
      const auto ready = backward_ready_ms(model);
      auto tick = [&](uint32_t k) {
        return spec.cycle_ms > 0 ? std::ceil(ready[k] / spec.cycle_ms - 1e-9) : ready[k];
      };
      return walk(model, [&](uint32_t k, uint64_t b, uint32_t, uint32_t) {
        return b >= spec.bytes || (k > 0 && tick(k - 1) != tick(k));
      });
    }
    case Kind::kAuto:
    case Kind::kMgwfbp:
      break;
  }
  throw std::invalid_argument("grouping " + spec.text() + " needs the simulator");
}

uint64_t group_message_bytes(uint64_t credit_bytes) {
  return std::min<uint64_t>(kMaxGroupBytes, credit_bytes / 2);
}

MessagePlan::MessagePlan(const ShardMap& shards, const Grouping& grouping, uint64_t max_bytes) {
  max_bytes = std::min<uint64_t>(max_bytes, kMaxGroupBytes);
  if (grouping.num_tensors() != shards.num_tensors()) {
    throw std::invalid_argument("message plan: the grouping is for " +
                                std::to_string(grouping.num_tensors()) + " tensors, the map has " +
                                std::to_string(shards.num_tensors()));
  }
  by_group_.resize(grouping.num_groups());
  auto add = [&](uint32_t g, uint32_t server, std::vector<uint32_t> chunks) {
    PlannedMessage m{g, server, std::move(chunks), 0};
    for (uint32_t id : m.chunks) m.bytes += shards.chunks()[id].bytes();
    by_group_[g].push_back(static_cast<uint32_t>(messages_.size()));
    messages_.push_back(std::move(m));
  };
  for (uint32_t g = 0; g < grouping.num_groups(); ++g) {
    const bool alone = grouping.end(g) - grouping.begin(g) == 1;
    std::map<uint32_t, std::vector<uint32_t>> open;  // server -> chunks being packed
    std::map<uint32_t, uint64_t> open_bytes;
    for (uint32_t k = grouping.begin(g); k < grouping.end(g); ++k) {
      const auto& ids = shards.tensor_chunks(k);
      if (alone || ids.size() > 1) {
        for (uint32_t id : ids) add(g, shards.chunks()[id].server, {id});
        continue;
      }
      const ChunkDesc& c = shards.chunks()[ids[0]];
      auto& pack = open[c.server];
      if (!pack.empty() &&
          (open_bytes[c.server] + c.bytes() > max_bytes || pack.size() >= kMaxGroupMembers)) {
        add(g, c.server, std::move(pack));
        pack.clear();
        open_bytes[c.server] = 0;
      }
      pack.push_back(c.id);
      open_bytes[c.server] += c.bytes();
    }
    for (auto& [server, pack] : open) {
      if (!pack.empty()) add(g, server, std::move(pack));
    }
  }
}

}  // namespace psrt
