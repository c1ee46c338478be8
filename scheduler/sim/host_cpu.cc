#include "scheduler/sim/host_cpu.h"

#include <algorithm>

namespace psrt::sim {

double Calendar::fit(double t, double ms) const {
  // The first stretch that ends after t; walk the gaps from there.
  auto it = std::upper_bound(busy_.begin(), busy_.end(), t,
                             [](double v, const std::pair<double, double>& b) {
                               return v < b.second;
                             });
  double start = t;
  for (; it != busy_.end(); ++it) {
    if (start + ms <= it->first) break;
    start = std::max(start, it->second);
  }
  return start;
}

void Calendar::book(double start, double ms) {
  if (!(ms > 0)) return;
  const std::pair<double, double> b{start, start + ms};
  busy_.insert(std::lower_bound(busy_.begin(), busy_.end(), b), b);
}

HostCpu::HostCpu(uint32_t processes, uint32_t cores, const Calibration& calibration)
    : threads_(processes), cores_(cores), cal_(calibration) {}

double HostCpu::take(uint32_t p, double t, double ms) {
  if (!(ms > 0)) return t;
  Calendar& thread = threads_.at(p);
  double start = thread.fit(t, ms);
  if (cores_.empty()) {
    thread.book(start, ms);
    return start + ms;
  }
  // Alternate until the thread and a core agree on a start: each fit only moves it later.
  Calendar* core = nullptr;
  while (true) {
    double soonest = 0;
    core = nullptr;
    for (auto& c : cores_) {
      const double s = c.fit(start, ms);
      if (!core || s < soonest) {
        core = &c;
        soonest = s;
      }
    }
    const double again = thread.fit(soonest, ms);
    if (again == soonest) {
      start = soonest;
      break;
    }
    start = again;
  }
  thread.book(start, ms);
  core->book(start, ms);
  return start + ms;
}

}  // namespace psrt::sim
