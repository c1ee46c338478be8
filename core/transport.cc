#include "core/transport.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <system_error>

#include "core/wire.h"

namespace psrt {

void configure_socket(zmq::socket_t& socket, const SocketOptions& options) {
  socket.set(zmq::sockopt::sndhwm, options.hwm);
  socket.set(zmq::sockopt::rcvhwm, options.hwm);
  socket.set(zmq::sockopt::linger, 2000);
  socket.set(zmq::sockopt::maxmsgsize, static_cast<int64_t>(kMaxPayloadBytes));
  if (options.ipv6) socket.set(zmq::sockopt::ipv6, 1);
  // Bigger kernel buffers keep large chunks streaming on fast links (README, "Transport").
  if (options.buffer_bytes > 0) {
    socket.set(zmq::sockopt::sndbuf, options.buffer_bytes);
    socket.set(zmq::sockopt::rcvbuf, options.buffer_bytes);
  }
}

zmq::socket_t make_router(zmq::context_t& ctx, const SocketOptions& options) {
  zmq::socket_t s(ctx, zmq::socket_type::router);
  configure_socket(s, options);
  s.set(zmq::sockopt::router_mandatory, 1);
  s.set(zmq::sockopt::router_handover, 0);
  if (options.curve) set_curve_server(s, *options.curve);
  return s;
}

zmq::socket_t make_dealer(zmq::context_t& ctx, const std::string& identity,
                          const SocketOptions& options) {
  zmq::socket_t s(ctx, zmq::socket_type::dealer);
  configure_socket(s, options);
  if (options.curve) set_curve_client(s, *options.curve);
  s.set(zmq::sockopt::routing_id, identity);
  s.set(zmq::sockopt::immediate, 0);
  return s;
}

std::string bind_endpoint(zmq::socket_t& socket, const std::string& endpoint) {
  std::string ep = endpoint;
  // "tcp://host:0" means "any port", as in the socket API.
  if (ep.size() > 2 && ep.compare(ep.size() - 2, 2, ":0") == 0) ep.replace(ep.size() - 1, 1, "*");
  socket.bind(ep);
  return socket.get(zmq::sockopt::last_endpoint);
}

bool recv_envelope(zmq::socket_t& socket, Envelope& out, bool with_identity) {
  out.identity.clear();
  out.payload.clear();
  out.header.rebuild();
  zmq::message_t frame;
  if (!socket.recv(frame, zmq::recv_flags::dontwait)) return false;
  bool first = true;
  bool have_header = false;
  while (true) {
    const bool more = frame.more();
    if (with_identity && first) {
      out.identity.assign(static_cast<const char*>(frame.data()), frame.size());
    } else if (!have_header) {
      out.header = std::move(frame);
      have_header = true;
    } else {
      out.payload.push_back(std::move(frame));
    }
    first = false;
    if (!more) break;
    frame = zmq::message_t();
    // The rest of a multipart message is always there once its first frame is.
    (void)socket.recv(frame, zmq::recv_flags::none);
  }
  return true;
}

bool send_envelope(zmq::socket_t& socket, const std::string* identity, const wire::Header& header,
                   std::vector<zmq::message_t> payload, bool* full) {
  return try_send_envelope(socket, identity, header, payload, full);
}

bool try_send_envelope(zmq::socket_t& socket, const std::string* identity,
                       const wire::Header& header, std::vector<zmq::message_t>& payload,
                       bool* full, std::size_t max_header_bytes) {
  try {
    // Only the first frame can meet the high-water mark: the rest of a message always follows.
    zmq::message_t head = encode_header(header);
    if (max_header_bytes > 0 && head.size() > max_header_bytes) {
      throw std::length_error(oversize_header(header, "its header"));
    }
    const auto more = [](bool m) { return m ? zmq::send_flags::sndmore : zmq::send_flags::none; };
    const bool sent =
        identity
            ? socket
                  .send(zmq::buffer(*identity),
                        zmq::send_flags::sndmore | zmq::send_flags::dontwait)
                  .has_value()
            : socket.send(head, more(!payload.empty()) | zmq::send_flags::dontwait).has_value();
    if (!sent) {
      if (full) *full = true;
      return false;
    }
    if (identity) socket.send(head, more(!payload.empty()));
    for (std::size_t i = 0; i < payload.size(); ++i) {
      socket.send(payload[i], more(i + 1 < payload.size()));
    }
  } catch (const zmq::error_t& e) {
    if (e.num() == EHOSTUNREACH) return false;
    throw;
  }
  return true;
}

namespace {
void release_owner(void* /*data*/, void* hint) {
  delete static_cast<std::shared_ptr<const void>*>(hint);
}
}  // namespace

zmq::message_t shared_frame(std::shared_ptr<const void> owner, const void* data, std::size_t size) {
  auto* hint = new std::shared_ptr<const void>(std::move(owner));
  return zmq::message_t(const_cast<void*>(data), size, &release_owner, hint);
}

Wakeup::Wakeup() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "eventfd");
}

Wakeup::~Wakeup() { ::close(fd_); }

void Wakeup::notify() {
  const uint64_t one = 1;
  // EAGAIN means the counter is saturated: the I/O thread will wake anyway.
  [[maybe_unused]] auto n = ::write(fd_, &one, sizeof one);
}

void Wakeup::drain() {
  uint64_t value = 0;
  [[maybe_unused]] auto n = ::read(fd_, &value, sizeof value);
}

}  // namespace psrt
