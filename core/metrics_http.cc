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
#include <vector>

#include "core/status.h"

namespace psrt {

namespace {

constexpr std::size_t kMaxRequest = 8192;
constexpr int kAcceptBackoffMs = 100;
constexpr int kRequestMs = 2000;  // a whole request and its reply
constexpr std::size_t kMaxClients = 64;  // more wait in the listen backlog

using Clock = std::chrono::steady_clock;

// The request line of a complete request ("GET /metrics HTTP/1.1"): read until its blank line
// (CRLF or LF), or kMaxRequest bytes. Empty while incomplete.
bool request_complete(const std::string& r) {
  return r.size() >= kMaxRequest || r.find("\r\n\r\n") != std::string::npos ||
         r.find("\n\n") != std::string::npos;
}

std::string request_line(const std::string& request) {
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

// One scraper's connection: its request as it arrives, then the reply as it leaves; the whole
// exchange gets kRequestMs, however it trickles.
struct MetricsHttpServer::Client {
  int fd = -1;
  Clock::time_point deadline;
  std::string request;
  std::string reply;  // empty while the request is read
  std::size_t sent = 0;
};

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
  // Every connection at once, each on its own deadline: one scraper that sends nothing (or
  // several) held every other one for 2 s each, past Prometheus' 10 s scrape timeout.
  std::vector<Client> clients;
  std::vector<pollfd> fds;
  while (true) {
    const short accepting = clients.size() < kMaxClients ? POLLIN : 0;
    fds.assign({{stop_fd_, POLLIN, 0}, {listen_fd_, accepting, 0}});
    auto wake = Clock::now() + std::chrono::hours(1);
    for (const auto& c : clients) {
      fds.push_back({c.fd, short(c.reply.empty() ? POLLIN : POLLOUT), 0});
      wake = std::min(wake, c.deadline);
    }
    const auto wait_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             wake - Clock::now()).count() + 1;
    if (::poll(fds.data(), fds.size(), int(std::clamp<int64_t>(wait_ms, 0, 3600000))) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[0].revents) break;
    for (std::size_t i = 0; i < clients.size(); ++i) {
      if (fds[i + 2].revents) step(clients[i]);
    }
    const auto now = Clock::now();
    std::erase_if(clients, [&](Client& c) {
      const bool over = c.fd < 0 || now >= c.deadline;
      if (over && c.fd >= 0) ::close(c.fd);
      return over;
    });
    if (fds[1].revents & POLLIN) accept_client(clients);
  }
  for (auto& c : clients) ::close(c.fd);
}

void MetricsHttpServer::accept_client(std::vector<Client>& clients) {
  const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (fd < 0) {
    // Out of descriptors (or memory), the pending connection stays and the socket stays
    // readable: wait a little (or for the stop) instead of spinning on accept.
    if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
      pollfd stop{stop_fd_, POLLIN, 0};
      (void)::poll(&stop, 1, kAcceptBackoffMs);
    }
    return;
  }
  clients.push_back({fd, Clock::now() + std::chrono::milliseconds(kRequestMs), {}, {}, 0});
}

void MetricsHttpServer::step(Client& c) {
  try {
    if (c.reply.empty()) {
      char buf[1024];
      const ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
      if (n > 0) c.request.append(buf, std::size_t(n));
      if (n <= 0 || request_complete(c.request)) c.reply = reply_to(request_line(c.request));
      if (c.reply.empty()) return;
    }
    const ssize_t n = ::send(c.fd, c.reply.data() + c.sent, c.reply.size() - c.sent,
                             MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (n > 0) c.sent += std::size_t(n);
    if (n > 0 && c.sent < c.reply.size()) return;
  } catch (const std::exception& e) {
    // A render that failed (memory) costs this scrape, not the daemon.
    spdlog::warn("metrics: a scrape failed: {}", e.what());
  }
  ::close(c.fd);  // answered, gone, or failed
  c.fd = -1;
}

std::string MetricsHttpServer::reply_to(const std::string& line) {
  if (line.empty()) return response("400 Bad Request", "text/plain", "no request line\n");
  if (line.rfind("GET /metrics ", 0) == 0 || line.rfind("GET /metrics?", 0) == 0 ||
      line == "GET /metrics") {
    return response("200 OK", "text/plain; version=0.0.4; charset=utf-8", render_());
  }
  return response("404 Not Found", "text/plain", "psrt serves GET /metrics only\n");
}

}  // namespace psrt
