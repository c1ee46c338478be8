// ZeroMQ's socket monitor for one socket: the events of a mask, reported on an inproc PAIR socket
// that the I/O thread watches like the ZAP handler's. Two uses:
// - a secured listener's failed CURVE handshakes: a process with another security.secret_file (its
//   keys derive from it) or with security.curve off fails before the ZAP handler (core/curve.h)
//   is asked, so the server said nothing and only the other side, after
//   cluster.start_timeout_s, said "nothing answered there";
// - a connecting socket's dropped connections (Messenger::on_drop): ZeroMQ reconnects, but what
//   was in flight on the old connection is lost;
// - a listener's failed accepts (the open-file limit used up, by idle connections say): the
//   processes that could not connect were blamed at the start deadline, and nothing was said.
#pragma once

#include <zmq.h>
#include <zmq.hpp>

#include <cstdint>
#include <functional>

namespace psrt {

class SocketMonitor {
 public:
  static constexpr int kFailedHandshakes = ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                                           ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                                           ZMQ_EVENT_HANDSHAKE_FAILED_AUTH;
  static constexpr int kDisconnected = ZMQ_EVENT_DISCONNECTED;
  static constexpr int kConnected = ZMQ_EVENT_HANDSHAKE_SUCCEEDED;  // a connection is up
  static constexpr int kAcceptFailed = ZMQ_EVENT_ACCEPT_FAILED;     // value: the errno

  // Monitors `watched` (of `ctx`) for the events of `mask`. In the thread that owns both.
  SocketMonitor(zmq::context_t& ctx, zmq::socket_t& watched, int mask);
  SocketMonitor(const SocketMonitor&) = delete;
  SocketMonitor& operator=(const SocketMonitor&) = delete;

  zmq::socket_t& socket() { return events_; }
  // Reads every waiting event; returns how many were of the mask, each told to `each` (if any)
  // by its id and value (an errno for a failure), in order.
  uint64_t handle(const std::function<void(int event, int value)>& each = {});

 private:
  zmq::socket_t events_;
  int mask_;
};

}  // namespace psrt
