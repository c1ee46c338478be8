// GradOptimizer's unit: a group is a run of consecutive tensor keys (consecutive in the order
// backward produces them, which is descending key order) pushed together. The message plan turns
// a grouping and a shard map into the messages that go on the wire: per group and server, the
// chunks of the group's single-chunk tensors packed into messages of at most kMaxGroupBytes (and
// kMaxGroupMembers members); a tensor of several chunks (a large one) is still sent chunk by
// chunk. A group of one tensor is exactly today's traffic: one message per chunk.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/grouping_spec.h"
#include "core/model.h"
#include "core/sharding.h"

namespace psrt {

class Grouping {
 public:
  Grouping() = default;
  // Every tensor alone.
  static Grouping singletons(uint32_t tensors);
  // Groups starting at `starts` (ascending, starts[0] == 0, all < tensors). Throws
  // std::invalid_argument otherwise.
  static Grouping from_starts(std::vector<uint32_t> starts, uint32_t tensors);

  uint32_t num_groups() const { return static_cast<uint32_t>(starts_.size()); }
  uint32_t num_tensors() const { return static_cast<uint32_t>(group_of_.size()); }
  uint32_t group_of(uint32_t key) const { return group_of_[key]; }
  uint32_t begin(uint32_t g) const { return starts_[g]; }  // first key
  uint32_t end(uint32_t g) const { return g + 1 < starts_.size() ? starts_[g + 1] : num_tensors(); }
  const std::vector<uint32_t>& starts() const { return starts_; }
  bool operator==(const Grouping& o) const {
    return starts_ == o.starts_ && group_of_ == o.group_of_;
  }
  // "7 groups: keys 0-3 (1.2 MB), 4 (64 KB), ..." for a log line (at most `max` groups listed).
  std::string describe(const ModelDesc& model, std::size_t max = 40) const;

 private:
  std::vector<uint32_t> starts_;
  std::vector<uint32_t> group_of_;
};

// Groupings that need no simulation: size:BYTES and ddp:BYTES:FIRST close a group (in backward
// order) once it holds at least its cap; horovod:BYTES:MS fuses what the profile's backward
// times make ready within one cycle, up to BYTES. Throws std::invalid_argument for auto and
// mgwfbp (scheduler/sim/grad_optimizer.h).
Grouping static_grouping(const ModelDesc& model, const GroupingSpec& spec);
// When backward produces each tensor, from the start of backward (the profile's times).
std::vector<double> backward_ready_ms(const ModelDesc& model);

struct PlannedMessage {
  uint32_t group = 0;
  uint32_t server = 0;
  std::vector<uint32_t> chunks;  // chunk ids, ascending
  uint64_t bytes = 0;            // dense bytes of its chunks
};

// The most dense bytes one group message holds with `credit_bytes` of push credit: half the
// credit, so that another message can be on the wire while its ACK comes back (a message over
// the credit goes only when nothing is in flight, and every one after it waits for its ACK: a
// 2.56 MB group under 256 KiB of credit ran at 2.2x psrt-sim's price), and kMaxGroupBytes.
uint64_t group_message_bytes(uint64_t credit_bytes);

class MessagePlan {
 public:
  MessagePlan() = default;
  // A group's single-chunk tensors are packed per server into messages of at most `max_bytes`
  // (group_message_bytes) and kMaxGroupMembers members; a tensor of several chunks goes chunk by
  // chunk.
  MessagePlan(const ShardMap& shards, const Grouping& grouping,
              uint64_t max_bytes = kMaxGroupBytes);

  const std::vector<PlannedMessage>& messages() const { return messages_; }
  const std::vector<uint32_t>& group_messages(uint32_t g) const { return by_group_[g]; }
  uint32_t num_groups() const { return static_cast<uint32_t>(by_group_.size()); }

 private:
  std::vector<PlannedMessage> messages_;
  std::vector<std::vector<uint32_t>> by_group_;
};

}  // namespace psrt
