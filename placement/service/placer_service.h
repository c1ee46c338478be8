// psrt-placer's service: a ROUTER socket on a Messenger answering PLACE_REQUEST with PLACE_REPLY
// (the plan) or ERROR (what was wrong), one request at a time on the I/O thread, until SIGINT or
// SIGTERM. The placers that search by simulation stop with an ERROR past max_search_s, so that
// one request cannot hold the service (and the requests behind it) for long. Nothing a peer
// sends stops it: every header is checked (core/wire.h), every request validated (request.h),
// and every failure is a reply, a log line and a counter.
#pragma once

#include <zmq.hpp>

#include <cstdint>
#include <string>

#include "core/messenger.h"
#include "core/metrics.h"
#include "core/rate_limit.h"
#include "core/wire.h"

namespace psrt::placement {

class PlacerService {
 public:
  static constexpr double kDefaultMaxSearchS = 60;
  PlacerService(const std::string& bind, std::string job_id,
                double max_search_s = kDefaultMaxSearchS);
  const std::string& endpoint() const { return endpoint_; }
  // Serves until SIGINT/SIGTERM (blocked here and read from a signalfd, so no handler runs).
  void run();

  uint64_t served() const { return served_; }
  uint64_t rejected() const { return rejected_; }

 private:
  void handle(const std::string& identity, const wire::Header& h);
  void reply_error(const std::string& identity, ErrorCode code, const std::string& message,
                   wire::MsgType about, uint64_t seq = 0);

  std::string job_id_;
  double max_search_s_;
  Metrics metrics_ = Metrics::off();
  LogLimiter log_{10};
  Messenger messenger_;  // its socket, poll loop and header checks (core/messenger.h)
  Messenger::LinkId router_;
  std::string endpoint_;
  bool stop_ = false;
  int signal_fd_ = -1;  // SIGINT, SIGTERM (run())
  Sender self_;
  uint64_t served_ = 0, rejected_ = 0;
};

}  // namespace psrt::placement
