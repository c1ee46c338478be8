// Runs a piece of the compute thread's work and records it on the timeline's compute track
// when a timeline is on (the trainers' forwards, backwards and waits).
#pragma once

#include <string>
#include <utility>

#include "core/timeline.h"

namespace psrt {

template <typename Fn>
void traced(Timeline* tl, const char* cat, const std::string& name, Fn&& fn) {
  if (!tl || !tl->enabled()) {
    std::forward<Fn>(fn)();
    return;
  }
  const auto start = Timeline::Clock::now();
  std::forward<Fn>(fn)();
  tl->span(Timeline::kCompute, cat, name, start, Timeline::Clock::now());
}

}  // namespace psrt
