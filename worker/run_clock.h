// The wall clock of a training run as TrainResult reports it: the whole run, and the steady time
// from the end of the first tenth (at least one iteration) to the end, so start-up does not
// count. The data-parallel trainer and the stage trainer share it.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>

#include "worker/trainer.h"

namespace psrt {

class RunClock {
 public:
  using Clock = std::chrono::steady_clock;

  // A run of iterations [first, total).
  RunClock(uint64_t first, uint64_t total)
      : first_(first),
        total_(total),
        warmup_(first + (total - first > 1 ? std::max<uint64_t>(1, (total - first) / 10) : 0)),
        start_(Clock::now()),
        steady_start_(start_) {}

  Clock::time_point start() const { return start_; }
  // At the top of iteration t. `settled`: the first iteration whose timing no start-up choice
  // changes any more (GradOptimizer's online trials, PsClient::grouping_final_from); the steady
  // time starts at the first iteration past the warm-up and settled.
  void at(uint64_t t, uint64_t settled = 0) {
    if (!steady_from_ && t >= warmup_ && t >= settled) {
      steady_from_ = t;
      steady_start_ = Clock::now();
    }
  }
  // The run has ended (its final parameters are in): iterations, seconds and the steady time
  // (the whole run's where no iteration was steady).
  void finish(TrainResult& result) const {
    const auto end = Clock::now();
    result.iterations = total_;
    result.seconds = std::chrono::duration<double>(end - start_).count();
    const uint64_t from = steady_from_.value_or(first_);
    result.steady_ms_per_iteration =
        std::chrono::duration<double, std::milli>(end - steady_start_).count() /
        double(std::max<uint64_t>(1, total_ - std::min(total_, from)));
  }

 private:
  uint64_t first_, total_, warmup_;
  Clock::time_point start_, steady_start_;  // steady_start_: start_ until a steady iteration
  std::optional<uint64_t> steady_from_;
};

}  // namespace psrt
