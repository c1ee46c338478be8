// psrt-placer's service: a ROUTER socket answering PLACE_REQUEST with PLACE_REPLY (the plan) or
// ERROR (what was wrong), one request at a time on the I/O thread, until SIGINT or SIGTERM.
// Nothing a peer sends stops it: every header is checked (core/wire.h), every request validated
// (request.h), and every failure is a reply, a log line and a counter.
#pragma once

#include <zmq.hpp>

#include <cstdint>
#include <string>

#include "core/wire.h"

namespace psrt::placement {

class PlacerService {
 public:
  PlacerService(const std::string& bind, std::string job_id);
  const std::string& endpoint() const { return endpoint_; }
  // Serves until SIGINT/SIGTERM (blocked here and read from a signalfd, so no handler runs).
  void run();

  uint64_t served() const { return served_; }
  uint64_t rejected() const { return rejected_; }

 private:
  void handle(const std::string& identity, const zmq::message_t& header,
              const std::vector<zmq::message_t>& payload);
  void reply_error(const std::string& identity, ErrorCode code, const std::string& message,
                   wire::MsgType about);

  zmq::context_t ctx_;
  zmq::socket_t router_;
  std::string endpoint_;
  std::string job_id_;
  Sender self_;
  uint64_t served_ = 0, rejected_ = 0;
};

}  // namespace psrt::placement
