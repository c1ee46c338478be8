// The wall clock of a training run as TrainResult reports it: the whole run, and the steady time
// from the end of the first tenth (at least one iteration) to the end, so start-up does not
// count. The data-parallel trainer and the stage trainer share it.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>

#include "worker/trainer.h"

namespace psrt {

class RunClock {
 public:
  using Clock = std::chrono::steady_clock;

  // A run of iterations [first, total).
  RunClock(uint64_t first, uint64_t total)
      : total_(total),
        warmup_(first + (total - first > 1 ? std::max<uint64_t>(1, (total - first) / 10) : 0)),
        start_(Clock::now()),
        steady_start_(start_) {}

  Clock::time_point start() const { return start_; }
  // At the top of iteration t.
  void at(uint64_t t) {
    if (t == warmup_) steady_start_ = Clock::now();
  }
  // The run has ended (its final parameters are in): iterations, seconds and the steady time.
  void finish(TrainResult& result) const {
    const auto end = Clock::now();
    result.iterations = total_;
    result.seconds = std::chrono::duration<double>(end - start_).count();
    result.steady_ms_per_iteration =
        std::chrono::duration<double, std::milli>(end - steady_start_).count() /
        double(std::max<uint64_t>(1, total_ - warmup_));
  }

 private:
  uint64_t total_, warmup_;
  Clock::time_point start_, steady_start_;
};

}  // namespace psrt
