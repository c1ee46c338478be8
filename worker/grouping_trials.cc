#include "worker/grouping_trials.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

namespace psrt {

GroupingTrials::GroupingTrials(std::size_t candidates, uint32_t timed)
    : timed_(std::max<uint32_t>(timed, 1)), samples_(candidates) {
  if (candidates < 2) throw std::invalid_argument("GroupingTrials: fewer than two candidates");
}

std::optional<std::size_t> GroupingTrials::on_iteration(uint64_t iteration, Clock::time_point now,
                                                        bool can_switch) {
  if (done_) return std::nullopt;
  // The iteration that just ended ran under current_: a sample unless it was the settling one
  // (run_ 1) or the iterations did not follow each other.
  if (last_iteration_ && iteration == *last_iteration_ + 1 && run_ >= 2) {
    const std::chrono::duration<double, std::milli> interval = now - last_start_;
    samples_[current_].push_back(interval.count());
  }
  last_iteration_ = iteration;
  last_start_ = now;
  if (samples_[current_].size() < timed_ || !can_switch) {
    ++run_;
    return std::nullopt;
  }
  run_ = 1;
  if (current_ + 1 < samples_.size()) return ++current_;
  const auto medians = medians_ms();
  winner_ = std::size_t(std::min_element(medians.begin(), medians.end()) - medians.begin());
  done_ = true;
  decided_at_ = iteration;
  return std::nullopt;
}

std::vector<double> GroupingTrials::medians_ms() const {
  std::vector<double> out;
  for (auto s : samples_) {
    if (s.empty()) {
      out.push_back(0);
      continue;
    }
    std::sort(s.begin(), s.end());
    const std::size_t n = s.size();
    out.push_back(n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2);
  }
  return out;
}

std::string GroupingTrials::describe(const std::vector<std::string>& names) const {
  const auto medians = medians_ms();
  std::string out;
  for (std::size_t i = 0; i < medians.size(); ++i) {
    char buf[48];
    std::snprintf(buf, sizeof buf, ": %.1f ms", medians[i]);
    if (!out.empty()) out += ", ";
    if (i < names.size()) {
      out += names[i];
    } else {
      out += '#';
      out += std::to_string(i);
    }
    out += buf;
  }
  return out;
}

}  // namespace psrt
