// The simulator's clock: actions ordered by (time, phase, sequence). Deterministic: equal times
// run in the order they were scheduled, except that decisions (`decide`) run after every state
// change scheduled for the same instant, so a decision sees everything that happened at that
// instant (a gradient that became ready at t competes with one whose credit came back at t).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace psrt::sim {

class EventQueue {
 public:
  using Action = std::function<void()>;

  double now() const { return now_; }
  // A state change at `time` (never before now()).
  void at(double time, Action action);
  // A decision at now(), after all state changes at now().
  void decide(Action action);
  // Runs until nothing is left. Returns the number of actions run.
  uint64_t run();

 private:
  // The heap holds small keys; the actions stay in slots (moving std::function through heap
  // sifts was most of the simulator's time).
  struct Event {
    double time;
    int phase;  // 0: state change, 1: decision
    uint64_t seq;
    uint32_t slot;  // in slots_
  };
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      if (a.time != b.time) return a.time > b.time;
      if (a.phase != b.phase) return a.phase > b.phase;
      return a.seq > b.seq;
    }
  };
  void push(double time, int phase, Action action);

  std::vector<Event> heap_;
  std::vector<Action> slots_;
  std::vector<uint32_t> free_slots_;
  double now_ = 0;
  uint64_t seq_ = 0;
};

}  // namespace psrt::sim
