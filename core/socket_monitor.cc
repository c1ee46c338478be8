#include "core/socket_monitor.h"

#include <cstring>
#include <string>

namespace psrt {

SocketMonitor::SocketMonitor(zmq::context_t& ctx, zmq::socket_t& watched, int mask)
    : events_(ctx, zmq::socket_type::pair), mask_(mask) {
  // One address per monitor: in-process tests run several processes' sockets in one context.
  const std::string address =
      "inproc://psrt-monitor-" + std::to_string(reinterpret_cast<uintptr_t>(this));
  if (zmq_socket_monitor(watched.handle(), address.c_str(), mask) != 0) throw zmq::error_t();
  events_.set(zmq::sockopt::linger, 0);
  events_.connect(address);
}

uint64_t SocketMonitor::handle(const std::function<void(int event, int value)>& each) {
  uint64_t seen = 0;
  while (true) {
    // An event: a frame of the event's id (16 bits) and value (32), then the endpoint's address.
    zmq::message_t head;
    if (!events_.recv(head, zmq::recv_flags::dontwait)) break;
    uint16_t id = 0;
    int32_t value = 0;
    if (head.size() >= sizeof id + sizeof value) {
      std::memcpy(&id, head.data(), sizeof id);
      std::memcpy(&value, static_cast<const char*>(head.data()) + sizeof id, sizeof value);
    }
    while (head.more()) {
      zmq::message_t rest;
      (void)events_.recv(rest, zmq::recv_flags::none);
      head.swap(rest);
    }
    if (!(id & mask_)) continue;
    ++seen;
    if (each) each(id, value);
  }
  return seen;
}

}  // namespace psrt
