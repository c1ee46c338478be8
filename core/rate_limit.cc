#include "core/rate_limit.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace psrt {

void LogLimiter::warn(const std::string& kind, const std::string& line, Clock::time_point now) {
  auto [it, fresh] = windows_.try_emplace(kind, Window{now});
  Window& w = it->second;
  if (!fresh && now - w.start >= std::chrono::seconds(1)) close(kind, w, now);
  if (w.shown < per_window_) {
    ++w.shown;
    spdlog::warn("{}", line);
  } else {
    ++w.dropped;
    ++suppressed_;
  }
}

void LogLimiter::close(const std::string& kind, Window& w, Clock::time_point now) {
  if (w.dropped > 0) {
    spdlog::warn("{}: {} more like it in the last {:.1f} s not shown (limits.log_lines_per_s)",
                 kind, w.dropped, std::chrono::duration<double>(now - w.start).count());
  }
  w = Window{now};
}

void LogLimiter::flush(Clock::time_point now, bool all) {
  for (auto it = windows_.begin(); it != windows_.end();) {
    if (all || now - it->second.start >= std::chrono::seconds(1)) {
      close(it->first, it->second, now);
      it = windows_.erase(it);
    } else {
      ++it;
    }
  }
}

bool PeerBudget::allow(const std::string& peer, Clock::time_point now) {
  if (buckets_.size() >= max_peers_ && !buckets_.count(peer)) buckets_.clear();
  auto [it, fresh] = buckets_.try_emplace(peer, Bucket{burst_, now});
  Bucket& b = it->second;
  if (!fresh) {
    const double dt = std::chrono::duration<double>(now - b.last).count();
    b.tokens = std::min(burst_, b.tokens + dt * per_s_);
    b.last = now;
  }
  if (b.tokens >= 1) {
    b.tokens -= 1;
    return true;
  }
  ++dropped_;
  return false;
}

}  // namespace psrt
