#include "scheduler/push_queue.h"

#include "core/credit_link.h"

namespace psrt {

PushQueue::PushQueue(SchedulePolicy policy, uint64_t credit_bytes)
    : policy_(policy), credit_(credit_bytes) {}

PushQueue::Order PushQueue::order_of(uint32_t priority, uint64_t seq) const {
  return {policy_.by_priority() ? priority : 0, seq};
}

void PushQueue::add(uint32_t key, uint32_t priority, std::vector<PushUnit> chunks) {
  const uint64_t seq = seq_++;
  for (auto& c : chunks) {
    c.key = key;
    c.priority = priority;
    c.seq = seq;
  }
  Tensor t{key, std::move(chunks), 0};
  pending_ += t.chunks.size();
  const Order order = order_of(priority, seq);
  if (policy_.holds_until_backward_done()) {
    held_.emplace_back(order, std::move(t));
    if (held_.size() >= expected_) {
      for (auto& [o, tensor] : held_) release(o, std::move(tensor));
      held_.clear();
    }
    return;
  }
  release(order, std::move(t));
}

void PushQueue::release(Order order, Tensor tensor) {
  if (tensor.chunks.empty()) return;
  ready_.emplace(order, std::move(tensor));
}

std::optional<PushUnit> PushQueue::next() {
  if (ready_.empty()) return std::nullopt;
  // Whole-tensor modes finish the tensor they started; the others take the best ready chunk.
  auto it = ready_.begin();
  if (!policy_.chunked() && current_) {
    auto cur = ready_.find(*current_);
    if (cur != ready_.end()) it = cur;
  }
  Tensor& t = it->second;
  const PushUnit& unit = t.chunks[t.next];
  if (!credit_allows(in_flight_, unit.bytes, credit_)) return std::nullopt;
  PushUnit out = unit;
  ++t.next;
  --pending_;
  in_flight_ += out.bytes;
  if (t.next == t.chunks.size()) {
    ready_.erase(it);
    current_.reset();
  } else {
    current_ = it->first;
  }
  return out;
}

void PushQueue::acked(uint64_t bytes) { in_flight_ = bytes > in_flight_ ? 0 : in_flight_ - bytes; }

}  // namespace psrt
