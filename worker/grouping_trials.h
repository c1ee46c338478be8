// Online trials of GradOptimizer's shortlist (scheduler.grouping_trials): the search ranks the
// groupings on a simulator whose error between close candidates (2-5% on a shared machine) can
// exceed their differences, so the worker runs its few cheapest candidates for a few iterations
// each at the start of the job, times them, and keeps the fastest for the rest of the job, as
// Horovod's autotuner times its fusion settings online.
//
// Timing. The worker's I/O thread sees the first gradient of each iteration (backward's first
// layer). The interval from iteration i's first gradient to iteration i+1's spans the rest of
// backward i, its pushes and replies under the grouping in force, and forward i+1: it is the
// iteration as that grouping makes it. A candidate runs one settling iteration after its switch
// (traffic of the grouping before may still be about), then `timed` iterations whose intervals
// are its samples; its figure is their median. Ties keep the earlier candidate (the search's
// choice is first).
//
// Switching. A grouping can change only between iterations, when nothing of the last one is left
// to send; on_iteration is told whether that holds and, when it does not, the candidate runs on
// (its extra intervals count as samples) until the next iteration where it does.
//
// One decision for the whole job. Every worker runs the same schedule (it depends only on the
// iterations), but each would decide from its own clock, and the workers must group alike: the
// servers reply to a chunk's group as one message to every worker. So worker 0's choice is the
// job's: it travels on its pushes and the servers' replies (Header.grouping_choice, from), and
// every worker switches to it at the iteration it names (PsClient::time_trials).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace psrt {

class GroupingTrials {
 public:
  using Clock = std::chrono::steady_clock;

  // `candidates` groupings (>= 2; index 0 is in force from the start), `timed` samples each.
  GroupingTrials(std::size_t candidates, uint32_t timed);

  // The iterations the trials take at least: from the first iteration to the winner's switch.
  static uint64_t min_iterations(std::size_t candidates, uint32_t timed) {
    return uint64_t(candidates) * (1 + timed);
  }

  // At the first gradient of a new iteration (iterations increasing), at time `now`;
  // `can_switch`: nothing of the iteration before is left to send. Returns the candidate to put
  // in force now, if the grouping is to change.
  std::optional<std::size_t> on_iteration(uint64_t iteration, Clock::time_point now,
                                          bool can_switch);

  bool done() const { return done_; }
  std::size_t current() const { return current_; }
  // Once done: the fastest candidate, and the iteration at whose start it was found (the last
  // candidate tried is still in force then: the switch to the winner is the caller's).
  std::size_t winner() const { return winner_; }
  uint64_t decided_at() const { return decided_at_; }
  // Each candidate's median interval in ms (0 where it has no sample yet).
  std::vector<double> medians_ms() const;
  // "ddp:..: 141.2 ms, mgwfbp: 143.0 ms, ..." for the log, names given in candidate order.
  std::string describe(const std::vector<std::string>& names) const;

 private:
  uint32_t timed_;
  std::vector<std::vector<double>> samples_;  // per candidate, intervals in ms
  std::size_t current_ = 0;
  uint32_t run_ = 0;  // iterations begun under the current candidate
  std::optional<uint64_t> last_iteration_;
  Clock::time_point last_start_{};
  bool done_ = false;
  std::size_t winner_ = 0;
  uint64_t decided_at_ = 0;
};

}  // namespace psrt
