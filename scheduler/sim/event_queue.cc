#include "scheduler/sim/event_queue.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace psrt::sim {

void EventQueue::at(double time, Action action) {
  if (!(time >= now_)) throw std::logic_error("EventQueue: an event in the past (or not a time)");
  if (time == now_) {
    changes_now_.push_back(std::move(action));
    return;
  }
  uint32_t slot = 0;
  if (free_slots_.empty()) {
    slot = static_cast<uint32_t>(slots_.size());
    slots_.push_back(std::move(action));
  } else {
    slot = free_slots_.back();
    free_slots_.pop_back();
    slots_[slot] = std::move(action);
  }
  heap_.push_back(Event{time, seq_++, slot});
  std::push_heap(heap_.begin(), heap_.end(), Later{});
}

void EventQueue::decide(Action action) { decisions_.push_back(std::move(action)); }

EventQueue::Action EventQueue::pop_heap() {
  std::pop_heap(heap_.begin(), heap_.end(), Later{});
  const Event e = heap_.back();
  heap_.pop_back();
  now_ = e.time;
  Action action = std::move(slots_[e.slot]);
  free_slots_.push_back(e.slot);
  return action;
}

uint64_t EventQueue::run() {
  uint64_t n = 0;
  for (;; ++n) {
    Action action;
    if (!heap_.empty() && heap_.front().time == now_) {
      action = pop_heap();  // scheduled before now() came: ahead of those scheduled at now()
    } else if (!changes_now_.empty()) {
      action = std::move(changes_now_.front());
      changes_now_.pop_front();
    } else if (!decisions_.empty()) {
      action = std::move(decisions_.front());
      decisions_.pop_front();
    } else if (!heap_.empty()) {
      action = pop_heap();
    } else {
      return n;
    }
    action();
  }
}

}  // namespace psrt::sim
