#include "core/metrics_http.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <exception>

#include "core/status.h"

namespace psrt {

namespace {

constexpr std::size_t kMaxRequest = 8192;
constexpr int kAcceptBackoffMs = 100;
constexpr int kRequestMs = 2000;  // a whole request and its reply

using Clock = std::chrono::steady_clock;

// Waits until `fd` is ready for `events` or the deadline passes; false then, or when the daemon
// stops. A scraper gets the whole request and reply kRequestMs together, however it trickles.
bool wait_for(int fd, short events, int stop_fd, Clock::time_point deadline) {
  while (true) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd fds[2] = {{fd, events, 0}, {stop_fd, POLLIN, 0}};
    const int n = ::poll(fds, 2, int(left));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || fds[1].revents) return false;
    return true;
  }
}

void write_all(int fd, const std::string& data, int stop_fd, Clock::time_point deadline) {
  std::size_t off = 0;
  while (off < data.size() && wait_for(fd, POLLOUT, stop_fd, deadline)) {
    const ssize_t n =
        ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) return;  // the scraper went away: nothing to do
    off += std::size_t(n);
  }
}

// The request line of an HTTP request ("GET /metrics HTTP/1.1"), read until its blank line
// (CRLF or LF); empty when it did not come by the deadline or the daemon stops.
std::string request_line(int client, int stop_fd, Clock::time_point deadline) {
  std::string request;
  char buf[1024];
  while (request.size() < kMaxRequest && request.find("\r\n\r\n") == std::string::npos &&
         request.find("\n\n") == std::string::npos) {
    if (!wait_for(client, POLLIN, stop_fd, deadline)) return "";
    const ssize_t n = ::recv(client, buf, sizeof buf, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) break;
    request.append(buf, std::size_t(n));
  }
  std::string line = request.substr(0, std::min(request.find('\n'), request.size()));
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return line;
}

std::string response(const char* status, const char* type, const std::string& body) {
  return std::string("HTTP/1.1 ") + status + "\r\nContent-Type: " + type +
         "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" +
         body;
}

// Binds a listening TCP socket at host:port; throws ConfigError naming the address.
int listen_at(const std::string& host, int port, int& bound_port) {
  const std::string where = host + ":" + std::to_string(port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  if (int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res); rc != 0) {
    throw ConfigError("metrics: cannot serve on " + where + ": " + gai_strerror(rc));
  }
  const int fd = ::socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  if (fd >= 0) ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  const bool ok =
      fd >= 0 && ::bind(fd, res->ai_addr, res->ai_addrlen) == 0 && ::listen(fd, 16) == 0;
  const int err = errno;
  freeaddrinfo(res);
  if (!ok) {
    if (fd >= 0) ::close(fd);
    throw ConfigError("metrics: cannot serve on " + where + ": " + std::strerror(err));
  }
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  bound_port = ntohs(addr.ss_family == AF_INET6
                         ? reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port
                         : reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  return fd;
}

}  // namespace

MetricsHttpServer::MetricsHttpServer(const std::string& host, int port,
                                     std::function<std::string()> render)
    : render_(std::move(render)) {
  listen_fd_ = listen_at(host, port, port_);
  stop_fd_ = ::eventfd(0, EFD_CLOEXEC);
  if (stop_fd_ < 0) {
    ::close(listen_fd_);
    throw ConfigError(std::string("metrics: eventfd: ") + std::strerror(errno));
  }
  thread_ = std::thread([this] { serve(); });
}

MetricsHttpServer::~MetricsHttpServer() {
  const uint64_t one = 1;
  (void)!::write(stop_fd_, &one, sizeof one);
  if (thread_.joinable()) thread_.join();
  ::close(stop_fd_);
  ::close(listen_fd_);
}

void MetricsHttpServer::serve() {
  while (true) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents) return;
    if (!(fds[0].revents & POLLIN)) continue;
    const int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) {
      // Out of descriptors (or memory), the pending connection stays and the socket stays
      // readable: wait a little (or for the stop) instead of spinning on accept.
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        pollfd stop{stop_fd_, POLLIN, 0};
        if (::poll(&stop, 1, kAcceptBackoffMs) > 0) return;
      }
      continue;
    }
    try {
      answer(client);
    } catch (const std::exception& e) {
      // A render or a reply that failed (memory) costs this scrape, not the daemon.
      spdlog::warn("metrics: a scrape failed: {}", e.what());
    }
    ::close(client);
  }
}

void MetricsHttpServer::answer(int client) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(kRequestMs);
  const std::string line = request_line(client, stop_fd_, deadline);
  if (line.empty()) return;  // nothing in time (or stopping): the next scraper's turn
  if (line.rfind("GET /metrics ", 0) == 0 || line.rfind("GET /metrics?", 0) == 0 ||
      line == "GET /metrics") {
    write_all(client, response("200 OK", "text/plain; version=0.0.4; charset=utf-8", render_()),
              stop_fd_, deadline);
  } else {
    write_all(client, response("404 Not Found", "text/plain", "psrt serves GET /metrics only\n"),
              stop_fd_, deadline);
  }
}

}  // namespace psrt
