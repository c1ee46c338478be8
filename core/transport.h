// ZeroMQ plumbing shared by the daemons: socket set-up, multipart send and receive, zero-copy
// payload frames, and the wake-up a non-I/O thread uses to reach the I/O thread without polling.
// Sockets are owned by one I/O thread per process (DESIGN.md, Threads).
#pragma once

#include <zmq.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/curve.h"
#include "proto/psrt_fwd.h"

namespace psrt {

// One received message: the routing identity (ROUTER sockets only), the header frame, payloads.
struct Envelope {
  std::string identity;
  zmq::message_t header;
  std::vector<zmq::message_t> payload;
};

// What the job's config sets on every socket: the high-water mark (messages queued per peer and
// direction; credit keeps the data plane far below it, so it only bounds what a peer that does
// not read can make a process queue) and, with security.curve, the keys (null: plain TCP).
struct SocketOptions {
  int hwm = 10000;
  const CurveKeys* curve = nullptr;
  // SO_SNDBUF and SO_RCVBUF (limits.socket_buffer_bytes); 0 leaves the OS's default and its
  // autotuning.
  int buffer_bytes = 4 << 20;
  // What a sender holds for one peer whose queue is full (core/held_sends.h): 64 MiB, or four
  // times the byte credit where that is more (a link's messages in flight follow the credit).
  std::size_t held_bytes = std::size_t(64) << 20;
  // ZMQ_IPV6: IPv6 addresses, and a wildcard bind of both families. Set only where the cluster's
  // addresses are IPv6 (core/endpoints.h, uses_ipv6): with it a host name may resolve to its
  // IPv6 address first, which a listener bound to an IPv4 address never answers.
  bool ipv6 = false;
};

// Options every psrt socket gets: those above, a bounded linger so shutdown flushes but never
// hangs, and on ROUTERs ROUTER_MANDATORY (a send to a departed peer is an error, not a silent
// drop) without ROUTER_HANDOVER (a second connection with a taken routing id is ignored, so
// nobody can take over a peer's link).
void configure_socket(zmq::socket_t& socket, const SocketOptions& options);
// A ROUTER is the CURVE server side; a DEALER the client side.
zmq::socket_t make_router(zmq::context_t& ctx, const SocketOptions& options = {});
zmq::socket_t make_dealer(zmq::context_t& ctx, const std::string& identity,
                          const SocketOptions& options = {});
// Binds and returns the endpoint actually bound (port 0 or * becomes the OS-chosen port).
std::string bind_endpoint(zmq::socket_t& socket, const std::string& endpoint);

// Receives one whole multipart message; false if none is waiting. ROUTER sockets set
// `with_identity`. A message of fewer frames than a header is returned with an empty header frame.
bool recv_envelope(zmq::socket_t& socket, Envelope& out, bool with_identity);

// Sends header + payload frames (moved, so zero-copy frames stay zero-copy) without blocking.
// Returns false when the peer is unreachable (ROUTER_MANDATORY's EHOSTUNREACH) or its queue is at
// the high-water mark (then `*full` is set, if given); other errors throw zmq::error_t.
bool send_envelope(zmq::socket_t& socket, const std::string* identity, const wire::Header& header,
                   std::vector<zmq::message_t> payload = {}, bool* full = nullptr);
// The same with `payload` taken only when the message was sent: a message that met a full queue
// keeps its frames, to be sent later (core/held_sends.h). A header over `max_header_bytes` (0: any)
// throws std::length_error: the peer's maxmsgsize would drop it with the connection.
bool try_send_envelope(zmq::socket_t& socket, const std::string* identity,
                       const wire::Header& header, std::vector<zmq::message_t>& payload,
                       bool* full = nullptr, std::size_t max_header_bytes = 0);

// A frame that points into memory kept alive by `owner` until ZeroMQ has sent it.
zmq::message_t shared_frame(std::shared_ptr<const void> owner, const void* data, std::size_t size);

// An eventfd: notify() from any thread, poll fd() in the I/O thread, drain() there after waking.
class Wakeup {
 public:
  Wakeup();
  ~Wakeup();
  Wakeup(const Wakeup&) = delete;
  Wakeup& operator=(const Wakeup&) = delete;
  void notify();
  void drain();
  int fd() const { return fd_; }

 private:
  int fd_;
};

}  // namespace psrt
