// The failed handshakes of a secured listening socket. A process with another security.secret_file
// (its keys derive from it) or with security.curve off fails the CURVE handshake before the ZAP
// handler (core/curve.h) is asked, so the server said nothing and only the other side, after
// cluster.start_timeout_s, said "nothing answered there". ZeroMQ's socket monitor reports those
// failures on an inproc PAIR socket, which the I/O thread watches like the ZAP handler's.
#pragma once

#include <zmq.hpp>

#include <cstdint>

namespace psrt {

class HandshakeMonitor {
 public:
  // Monitors `watched` (of `ctx`) for failed handshakes. In the thread that owns both.
  HandshakeMonitor(zmq::context_t& ctx, zmq::socket_t& watched);
  HandshakeMonitor(const HandshakeMonitor&) = delete;
  HandshakeMonitor& operator=(const HandshakeMonitor&) = delete;

  zmq::socket_t& socket() { return events_; }
  // Reads every waiting event; returns how many were failed handshakes.
  uint64_t handle();

 private:
  zmq::socket_t events_;
};

}  // namespace psrt
