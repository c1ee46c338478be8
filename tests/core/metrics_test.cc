// The metrics endpoint: GET /metrics returns the rendered registry, other paths 404, a scraper that
// connects and sends nothing does not keep others out, and an unset port serves nothing.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <cerrno>
#include <string>
#include <thread>
#include <vector>

#include "core/config.h"
#include "core/metrics.h"
#include "core/metrics_http.h"
#include "core/wire.h"

using namespace psrt;

namespace {

int connect_to(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(uint16_t(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  return fd;
}

// Gives up after 8 s without a byte (the endpoint holds no one longer than 2 s).
std::string http_get(int port, const std::string& path) {
  const int fd = connect_to(port);
  const timeval limit{8, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  const std::string req = "GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n";
  REQUIRE(::send(fd, req.data(), req.size(), 0) == ssize_t(req.size()));
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) out.append(buf, std::size_t(n));
  ::close(fd);
  return out;
}

}  // namespace

TEST_CASE("the metrics endpoint answers GET /metrics and nothing else", "[metrics]") {
  int renders = 0;
  MetricsHttpServer http("127.0.0.1", 0,
                         [&] { return "psrt_x " + std::to_string(++renders) + "\n"; });
  REQUIRE(http.port() > 0);
  const std::string ok = http_get(http.port(), "/metrics");
  CHECK(ok.rfind("HTTP/1.1 200 OK", 0) == 0);
  CHECK(ok.find("\r\n\r\npsrt_x 1\n") != std::string::npos);
  CHECK(http_get(http.port(), "/other").rfind("HTTP/1.1 404", 0) == 0);
  // A client that connects and says nothing is dropped; the next one is answered.
  const int silent = connect_to(http.port());
  CHECK(http_get(http.port(), "/metrics").find("psrt_x 2") != std::string::npos);
  ::close(silent);
}

TEST_CASE("a scraper that trickles its request holds neither the endpoint nor the daemon's exit",
          "[metrics]") {
  auto http = std::make_unique<MetricsHttpServer>("127.0.0.1", 0, [] { return "psrt_x 1\n"; });
  const int port = http->port();
  // One byte every 0.3 s: each read came within the old 1 s limit, so the request never ended.
  std::atomic<bool> done{false};
  const int slow = connect_to(port);
  std::thread trickle([&] {
    const std::string req = "GET /metrics HTTP/1.1\r\nHost: " + std::string(100, 'x');
    for (std::size_t i = 0; !done && i < req.size(); ++i) {
      (void)::send(slow, req.data() + i, 1, MSG_NOSIGNAL);
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
  });
  CHECK(http_get(port, "/metrics").find("psrt_x 1") != std::string::npos);
  // An LF-only request is answered too.
  const int fd = connect_to(port);
  const std::string lf = "GET /metrics HTTP/1.0\n\n";
  REQUIRE(::send(fd, lf.data(), lf.size(), 0) == ssize_t(lf.size()));
  char buf[64] = {};
  CHECK(::recv(fd, buf, sizeof buf - 1, MSG_WAITALL) > 0);
  CHECK(std::string(buf).rfind("HTTP/1.1 200 OK", 0) == 0);
  ::close(fd);
  // The daemon ends while the trickle goes on (it waited for the trickle's end before).
  const int waiting = connect_to(port);
  http.reset();
  done = true;
  trickle.join();
  ::close(slow);
  ::close(waiting);
}

TEST_CASE("a scrape whose render throws is closed unanswered and the next is served",
          "[metrics]") {
  int renders = 0;
  MetricsHttpServer http("127.0.0.1", 0, [&]() -> std::string {
    if (++renders == 1) throw std::runtime_error("render failed");
    return "psrt_x " + std::to_string(renders) + "\n";
  });
  CHECK(http_get(http.port(), "/metrics").empty());
  CHECK(http_get(http.port(), "/metrics").find("psrt_x 2") != std::string::npos);
}

TEST_CASE("a daemon's metrics count what it records, with its role and rank", "[metrics]") {
  MetricsConfig cfg;
  CHECK_FALSE(Metrics::serve(cfg, "worker", 0, 0).enabled());  // port -1: off
  cfg.port = 0;
  Metrics m = Metrics::serve(cfg, "worker", 3, 5);
  REQUIRE(m.enabled());
  m.message(Metrics::Dir::kSent, Metrics::Kind::kPush, 1000);
  m.message(Metrics::Dir::kSent, Metrics::Kind::kPush, 24);
  m.error("bad-header");
  m.round_trip(0.002);
  m.lost_peer();
  const std::string text = http_get(m.port(), "/metrics");
  CHECK(text.find("psrt_payload_bytes_total{rank=\"3\",role=\"worker\",direction=\"sent\","
                  "type=\"push\"} 1024") != std::string::npos);
  CHECK(text.find("psrt_errors_total{rank=\"3\",role=\"worker\",kind=\"bad-header\"} 1") !=
        std::string::npos);
  CHECK(text.find("psrt_chunk_round_trip_seconds_count{rank=\"3\",role=\"worker\"} 1") !=
        std::string::npos);
  CHECK(text.find("psrt_lost_peers_total{rank=\"3\",role=\"worker\"} 1") != std::string::npos);
}

// Model parallelism's stage-to-stage messages were counted as type="control".
TEST_CASE("stage-to-stage messages are counted as activation traffic", "[metrics]") {
  for (auto type : {wire::ACTIVATION, wire::ACTIVATION_GRAD, wire::STAGE_ACK}) {
    CHECK(metrics_kind(type) == Metrics::Kind::kActivation);
  }
  CHECK(metrics_kind(wire::HEARTBEAT) == Metrics::Kind::kControl);
  MetricsConfig cfg;
  cfg.port = 0;
  Metrics m = Metrics::serve(cfg, "worker", 1, 1);
  REQUIRE(m.enabled());
  m.message(Metrics::Dir::kReceived, metrics_kind(wire::ACTIVATION), 4096);
  const std::string text = http_get(m.port(), "/metrics");
  CHECK(text.find("psrt_payload_bytes_total{rank=\"1\",role=\"worker\",direction=\"received\","
                  "type=\"activation\"} 4096") != std::string::npos);
  CHECK(text.find("direction=\"received\",type=\"control\"} 0") != std::string::npos);
}

// Idle connections were served one after the other, 2 s each: a few of them delayed every
// scrape past Prometheus' 10 s timeout. Now the scrape is answered while they are still open
// (the old endpoint had to time each one out, closing it, before it read the scrape).
TEST_CASE("idle connections do not hold up a scrape", "[metrics]") {
  MetricsHttpServer http("127.0.0.1", 0, [] { return "psrt_x 1\n"; });
  std::vector<int> idle;
  for (int i = 0; i < 8; ++i) idle.push_back(connect_to(http.port()));
  CHECK(http_get(http.port(), "/metrics").find("psrt_x 1") != std::string::npos);
  for (int fd : idle) {
    char c = 0;
    const ssize_t n = ::recv(fd, &c, 1, MSG_DONTWAIT);
    CHECK((n < 0 && errno == EAGAIN));  // open, unanswered: not closed by the endpoint
    ::close(fd);
  }
}

TEST_CASE("the metrics address is logged as a URL, an IPv6 host in brackets", "[metrics]") {
  CHECK(metrics_url("0.0.0.0", 9100) == "http://0.0.0.0:9100/metrics");
  CHECK(metrics_url("::", 9100) == "http://[::]:9100/metrics");  // was http://:::9100
}
