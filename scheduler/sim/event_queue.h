// The simulator's clock: actions ordered by (time, phase, sequence). Deterministic: equal times
// run in the order they were scheduled, except that decisions (`decide`) run after every state
// change scheduled for the same instant, so a decision sees everything that happened at that
// instant (a gradient that became ready at t competes with one whose credit came back at t).
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "scheduler/sim/action.h"

namespace psrt::sim {

class EventQueue {
 public:
  using Action = sim::Action;

  double now() const { return now_; }
  // A state change at `time` (never before now()).
  void at(double time, Action action);
  // A decision at now(), after all state changes at now().
  void decide(Action action);
  // Runs until nothing is left. Returns the number of actions run.
  uint64_t run();

 private:
  // Future state changes wait in a heap of small keys, their actions in slots (moving
  // callables through heap sifts was most of the simulator's time). Those for now() and the
  // decisions, most of the simulator's events, skip the heap: each instant's go into two FIFOs.
  // The order is the same: a state change in the heap for now() was scheduled before now() came,
  // so before any in the FIFO, which were scheduled at now(); decisions are always for now(),
  // after its state changes; time moves on only when both FIFOs are empty.
  struct Event {
    double time;
    uint64_t seq;
    uint32_t slot;  // in slots_
  };
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      return a.time != b.time ? a.time > b.time : a.seq > b.seq;
    }
  };
  Action pop_heap();

  std::vector<Event> heap_;
  std::vector<Action> slots_;
  std::vector<uint32_t> free_slots_;
  std::deque<Action> changes_now_;  // state changes for now(), scheduled at now()
  std::deque<Action> decisions_;    // for now()
  double now_ = 0;
  uint64_t seq_ = 0;
};

}  // namespace psrt::sim
