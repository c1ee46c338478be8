// The device the replay backends emulate: a layer's time is spent waiting, and the device runs the
// layers it is given back to back on its own clock. The host thread wakes from each wait a little
// late (timer slack and scheduling: about 0.1 ms on the development VM, more under load). That
// lateness is the host's, not the device's: the next layer starts where the last one ended, not
// where the host woke, so a profile of 120 layers is not 2 x 120 wake-ups slower than its times
// say (which psrt-sim and the bounds assume). A host that was away longer (waiting for parameters
// or for a stage's activations) starts the device late by as much, less its last wake-up's delay.
#pragma once

#include <chrono>
#include <functional>

namespace psrt {

class EmulatedDevice {
 public:
  using Clock = std::chrono::steady_clock;
  // The host's clock and wait: the real ones, or a test's.
  struct Host {
    std::function<Clock::time_point()> now;
    std::function<void(Clock::time_point)> sleep_until;
  };
  EmulatedDevice();
  explicit EmulatedDevice(Host host);

  // Runs a layer of `ms` milliseconds (nothing when <= 0) and returns when it has ended.
  void spend(double ms);
  // When the last layer ended on the device's clock.
  Clock::time_point end() const { return end_; }

 private:
  Host host_;
  Clock::time_point end_{};
  Clock::duration late_{};  // how late the host woke from the last layer's wait
};

}  // namespace psrt
