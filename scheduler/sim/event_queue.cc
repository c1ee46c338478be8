#include "scheduler/sim/event_queue.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace psrt::sim {

void EventQueue::push(double time, int phase, Action action) {
  uint32_t slot = 0;
  if (free_slots_.empty()) {
    slot = static_cast<uint32_t>(slots_.size());
    slots_.push_back(std::move(action));
  } else {
    slot = free_slots_.back();
    free_slots_.pop_back();
    slots_[slot] = std::move(action);
  }
  heap_.push_back(Event{time, phase, seq_++, slot});
  std::push_heap(heap_.begin(), heap_.end(), Later{});
}

void EventQueue::at(double time, Action action) {
  if (time < now_) throw std::logic_error("EventQueue: an event in the past");
  push(time, 0, std::move(action));
}

void EventQueue::decide(Action action) {
  push(now_, 1, std::move(action));
}

uint64_t EventQueue::run() {
  uint64_t n = 0;
  while (!heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(), Later{});
    const Event e = heap_.back();
    heap_.pop_back();
    now_ = e.time;
    Action action = std::move(slots_[e.slot]);
    free_slots_.push_back(e.slot);
    action();
    ++n;
  }
  return n;
}

}  // namespace psrt::sim
