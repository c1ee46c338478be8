// Online trials of GradOptimizer's shortlist (scheduler.grouping_trials): the search ranks the
// groupings on a simulator whose error between close candidates (2-5% on a shared machine) can
// exceed their differences, so the worker runs its few cheapest candidates for a few iterations
// each at the start of the job, times them, and keeps the fastest for the rest of the job, as
// Horovod's autotuner times its fusion settings online.
//
// Timing. The worker's I/O thread sees the first gradient of each iteration (backward's first
// layer). The interval from iteration i's first gradient to iteration i+1's spans the rest of
// backward i, its pushes and replies under the grouping in force, and forward i+1: it is the
// iteration as that grouping makes it (the grouping changes at a first gradient, when the one
// before has nothing left to send, so the whole interval is the new grouping's).
//
// Schedule. `warmup` iterations under the first candidate are not timed (a job's first iterations
// are slow: connections, caches, the servers' first updates), then the candidates take turns, one
// timed iteration each, for `rounds` rounds (ABCABC..., so that a drift of the machine weighs on
// each alike), and each candidate's figure is the median of its intervals. Ties keep the earlier
// candidate (the search's choice is first).
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

  // `candidates` groupings (>= 2; index 0 is in force from the start), `rounds` timed iterations
  // each, after `warmup` untimed ones.
  GroupingTrials(std::size_t candidates, uint32_t rounds, uint32_t warmup = kWarmup);
  static constexpr uint32_t kWarmup = 2;

  // The iterations from the first to the decision, which is made at the start of the last of
  // them (that iteration runs untimed under the last candidate).
  static uint64_t iterations(std::size_t candidates, uint32_t rounds, uint32_t warmup = kWarmup) {
    return uint64_t(warmup) + uint64_t(candidates) * rounds + 1;
  }

  // At the first gradient of a new iteration (iterations increasing), at time `now`;
  // `can_switch`: nothing of the iteration before is left to send. Returns the candidate to put
  // in force now, if the grouping is to change. Where a switch is due but cannot be made, the
  // iteration runs untimed under the candidate in force and the switch is tried at the next.
  std::optional<std::size_t> on_iteration(uint64_t iteration, Clock::time_point now,
                                          bool can_switch);

  bool done() const { return done_; }
  uint32_t rounds() const { return rounds_; }
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
  std::size_t candidates_;
  uint32_t rounds_, warmup_;
  std::vector<std::vector<double>> samples_;  // per candidate, intervals in ms
  std::size_t current_ = 0;
  uint64_t begun_ = 0;  // iterations begun
  uint64_t slot_ = 0;   // timed iterations begun
  bool timed_ = false;  // the iteration begun last is timed
  std::optional<uint64_t> last_iteration_;
  Clock::time_point last_start_{};
  bool done_ = false;
  std::size_t winner_ = 0;
  uint64_t decided_at_ = 0;
};

}  // namespace psrt
