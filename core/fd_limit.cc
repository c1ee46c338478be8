#include "core/fd_limit.h"

#include <sys/resource.h>

#include <algorithm>

namespace psrt {

namespace {
constexpr uint64_t kMargin = 64;         // ZeroMQ's threads and mailboxes, files, logs, the data
constexpr uint64_t kMetricsClients = 64;  // core/metrics_http.h serves that many at once
constexpr uint64_t kStageLinks = 8;       // a stage worker's links to its neighbours
}  // namespace

uint64_t daemon_open_files(bool server, int servers, int workers, bool metrics) {
  const uint64_t s = uint64_t(std::max(0, servers)), w = uint64_t(std::max(0, workers));
  const uint64_t peers = server ? s + w + 2 : 2 * s + kStageLinks;
  return kMargin + peers + (metrics ? kMetricsClients : 0);
}

std::string ensure_open_files(uint64_t need) {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) return "";  // nothing to go by: carry on
  if (lim.rlim_cur == RLIM_INFINITY || lim.rlim_cur >= need) return "";
  const rlim_t wanted =
      lim.rlim_max == RLIM_INFINITY ? rlim_t(need) : std::min(rlim_t(need), lim.rlim_max);
  if (wanted > lim.rlim_cur) {
    rlimit raised = lim;
    raised.rlim_cur = wanted;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) lim.rlim_cur = wanted;
  }
  if (lim.rlim_cur >= need) return "";
  return "the open-file limit is " + std::to_string(lim.rlim_cur) + " (ulimit -n; hard limit " +
         (lim.rlim_max == RLIM_INFINITY ? std::string("unlimited")
                                        : std::to_string(lim.rlim_max)) +
         "), and this process needs about " + std::to_string(need) +
         " for this job: out of descriptors, connections are dropped without a word; raise it";
}

}  // namespace psrt
