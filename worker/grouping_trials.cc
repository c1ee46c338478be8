#include "worker/grouping_trials.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

namespace psrt {

GroupingTrials::GroupingTrials(std::size_t candidates, uint32_t rounds, uint32_t warmup)
    : candidates_(candidates),
      rounds_(std::max<uint32_t>(rounds, 1)),
      warmup_(warmup),
      samples_(candidates) {
  if (candidates < 2) throw std::invalid_argument("GroupingTrials: fewer than two candidates");
}

std::optional<std::size_t> GroupingTrials::on_iteration(uint64_t iteration, Clock::time_point now,
                                                        bool can_switch) {
  if (done_) return std::nullopt;
  // The iteration that just ended: a sample of the candidate in force, if it was timed and the
  // iterations follow each other.
  if (last_iteration_ && iteration == *last_iteration_ + 1 && timed_) {
    const std::chrono::duration<double, std::milli> interval = now - last_start_;
    samples_[current_].push_back(interval.count());
  }
  last_iteration_ = iteration;
  last_start_ = now;
  timed_ = false;
  if (begun_++ < warmup_) return std::nullopt;
  if (slot_ == uint64_t(candidates_) * rounds_) {
    // The smallest median; a candidate without a timed interval (gaps) cannot win.
    const auto medians = medians_ms();
    for (std::size_t c = 0; c < candidates_; ++c) {
      if (!samples_[c].empty() && (samples_[winner_].empty() || medians[c] < medians[winner_])) {
        winner_ = c;
      }
    }
    done_ = true;
    decided_at_ = iteration;
    return std::nullopt;
  }
  const std::size_t want = std::size_t(slot_ % candidates_);
  if (want != current_ && !can_switch) return std::nullopt;
  ++slot_;
  timed_ = true;
  if (want == current_) return std::nullopt;
  current_ = want;
  return want;
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
