// The HTTP endpoint a daemon's metrics are scraped from: a listening TCP socket and one thread that
// answers `GET /metrics` with the text the caller renders, and 404 to anything else. It sleeps in
// poll() on the socket, its clients and an eventfd (no busy polling) and serves up to 64
// connections at once (more wait in the backlog); each gets 2 s in all for its request (8 KiB of
// it are read; CRLF or LF line ends) and the reply, however it trickles, and a daemon that stops
// drops them at once, so slow, idle or hostile scrapers can hold neither the other scrapes (a
// few idle connections once delayed every scrape by 2 s each) nor the daemon's exit (one sending
// a byte a second once did, for hours). A scrape that fails (the render throws, memory) is
// closed unanswered and the thread serves on; out of descriptors, it retries accept every 100 ms.
// Written here instead of prometheus-cpp's civetweb exposer, whose 100 KiB thread stacks cannot be
// created in a process that links cuBLAS (its static TLS is larger than that).
#pragma once

#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace psrt {

class MetricsHttpServer {
 public:
  // Binds host:port (port 0: OS-chosen) and starts serving. Throws ConfigError naming the address.
  MetricsHttpServer(const std::string& host, int port, std::function<std::string()> render);
  ~MetricsHttpServer();
  MetricsHttpServer(const MetricsHttpServer&) = delete;
  MetricsHttpServer& operator=(const MetricsHttpServer&) = delete;

  int port() const { return port_; }

 private:
  struct Client;  // one connection (metrics_http.cc)
  void serve();
  void accept_client(std::vector<Client>& clients);
  // Reads the request or writes the reply, as far as the socket allows; closes it when done.
  void step(Client& c);
  std::string reply_to(const std::string& request_line);

  std::function<std::string()> render_;
  int listen_fd_ = -1;
  int stop_fd_ = -1;
  int port_ = 0;
  std::thread thread_;
};

}  // namespace psrt
