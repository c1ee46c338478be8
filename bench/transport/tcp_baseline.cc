#include "bench/transport/tcp_baseline.h"

#include <zmq.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace psrt::bench {

namespace {

void check(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string(what) + ": " + std::strerror(errno));
}

bool read_all(int fd, char* p, std::size_t n) {
  while (n > 0) {
    const ssize_t r = ::read(fd, p, n);
    if (r <= 0) {
      if (r < 0 && errno == EINTR) continue;
      return false;
    }
    p += r;
    n -= std::size_t(r);
  }
  return true;
}

void write_all(int fd, const char* p, std::size_t n) {
  while (n > 0) {
    const ssize_t r = ::write(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    check(r > 0, "write");
    p += r;
    n -= std::size_t(r);
  }
}

void tune(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  int buf = 4 << 20;  // as psrt's sockets
  ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
}

}  // namespace

int run_tcp_echo_server() {
  const int ls = ::socket(AF_INET, SOCK_STREAM, 0);
  check(ls >= 0, "socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  check(::bind(ls, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0, "bind");
  check(::listen(ls, 1) == 0, "listen");
  socklen_t len = sizeof addr;
  ::getsockname(ls, reinterpret_cast<sockaddr*>(&addr), &len);
  std::printf("PSRT_LISTENING %d\n", ntohs(addr.sin_port));
  std::fflush(stdout);
  const int fd = ::accept(ls, nullptr, nullptr);
  check(fd >= 0, "accept");
  tune(fd);
  std::vector<char> buf;
  while (true) {
    uint64_t n = 0;
    if (!read_all(fd, reinterpret_cast<char*>(&n), sizeof n)) break;
    if (n > (1ull << 32)) break;
    buf.resize(n);
    if (!read_all(fd, buf.data(), n)) break;
    write_all(fd, buf.data(), n);
  }
  ::close(fd);
  ::close(ls);
  return 0;
}

TcpClient::TcpClient(int port) {
  fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  check(fd_ >= 0, "socket");
  tune(fd_);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(uint16_t(port));
  check(::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0, "connect");
}

TcpClient::~TcpClient() {
  if (fd_ >= 0) ::close(fd_);
}

void TcpClient::round_trip(std::vector<char>& buf) {
  const uint64_t n = buf.size();
  write_all(fd_, reinterpret_cast<const char*>(&n), sizeof n);
  write_all(fd_, buf.data(), n);
  check(read_all(fd_, buf.data(), n), "read");
}

int run_zmq_echo_server() {
  zmq::context_t ctx(1);
  zmq::socket_t router(ctx, zmq::socket_type::router);
  router.set(zmq::sockopt::sndbuf, 4 << 20);
  router.set(zmq::sockopt::rcvbuf, 4 << 20);
  router.bind("tcp://127.0.0.1:*");
  std::printf("PSRT_LISTENING %s\n", router.get(zmq::sockopt::last_endpoint).c_str());
  std::fflush(stdout);
  while (true) {
    zmq::message_t id, body;
    if (!router.recv(id) || !router.recv(body)) break;
    if (body.size() == 0) break;  // the client's goodbye
    router.send(id, zmq::send_flags::sndmore);
    router.send(body, zmq::send_flags::none);
  }
  return 0;
}

struct ZmqClient::Impl {
  zmq::context_t ctx{1};
  zmq::socket_t dealer{ctx, zmq::socket_type::dealer};
};

ZmqClient::ZmqClient(const std::string& endpoint) : impl_(new Impl) {
  impl_->dealer.set(zmq::sockopt::sndbuf, 4 << 20);
  impl_->dealer.set(zmq::sockopt::rcvbuf, 4 << 20);
  impl_->dealer.set(zmq::sockopt::linger, 1000);
  impl_->dealer.connect(endpoint);
}

ZmqClient::~ZmqClient() {
  impl_->dealer.send(zmq::message_t(), zmq::send_flags::none);
  delete impl_;
}

void ZmqClient::round_trip(std::vector<char>& buf) {
  impl_->dealer.send(zmq::buffer(buf), zmq::send_flags::none);
  zmq::message_t reply;
  check(impl_->dealer.recv(reply).has_value(), "zmq recv");
  std::memcpy(buf.data(), reply.data(), std::min(reply.size(), buf.size()));
}

}  // namespace psrt::bench
