// The processes' I/O threads and the cores they share, for the pipeline simulator, where work is
// booked as the tasks are walked, not in time order (scheduler/sim/pipeline.h): each thread and
// each core is a calendar of busy stretches, and a piece of work takes the earliest stretch from
// its ready time on where its process's thread and some core are both free.
//
// What the work is comes from the calibration (calibration.h): per message a process sends or
// receives and per payload byte it receives. With no calibration every take is free.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "scheduler/sim/calibration.h"

namespace psrt::sim {

// Busy stretches of one serial resource, booked in any order.
class Calendar {
 public:
  // The earliest start >= t of a free stretch of `ms`.
  double fit(double t, double ms) const;
  void book(double start, double ms);

 private:
  std::vector<std::pair<double, double>> busy_;  // [start, end), sorted and disjoint
};

class HostCpu {
 public:
  // `processes` I/O threads; `cores` shared by all of them (0: each has a core of its own).
  HostCpu(uint32_t processes, uint32_t cores, const Calibration& calibration);

  // When `ms` of process p's I/O work, ready at t, ends.
  double take(uint32_t p, double t, double ms);

  // The calibration whose per-message costs (calibration.h) the callers book here.
  const Calibration& calibration() const { return cal_; }

 private:
  std::vector<Calendar> threads_, cores_;
  Calibration cal_;
};

}  // namespace psrt::sim
