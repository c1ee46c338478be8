// The pieces of issue 17 that need no sockets: the security and limits config, CURVE key
// derivation, the per-peer reply budget, the rate-limited warnings, and printable().
#include <catch2/catch.hpp>

#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>

#include "config/job_config.h"
#include "core/config.h"
#include "core/config_limits.h"
#include "core/curve.h"
#include "core/rate_limit.h"
#include "core/status.h"
#include "core/transport.h"
#include "core/wire.h"

using namespace psrt;

TEST_CASE("security and limits parse with defaults, bounds and unknown keys refused",
          "[config][security]") {
  const Config d = parse_config("", "job.yaml");
  CHECK_FALSE(d.security.curve);
  CHECK(d.limits.socket_hwm == 10000);
  CHECK(d.limits.socket_buffer_bytes == 4 << 20);
  CHECK_FALSE(d.limits.allow_non_finite);
  CHECK(d.cluster.progress_timeout_s == 300);
  const Config c = parse_config(
      "security: {curve: true, secret_file: /tmp/x.secret}\n"
      "limits: {socket_hwm: 500, allow_non_finite: true, server_memory_bytes: 1048576,\n"
      "         socket_buffer_bytes: 0}\n"
      "cluster: {progress_timeout_s: 0}\n",
      "job.yaml");
  CHECK(c.security.curve);
  CHECK(c.security.secret_file == "/tmp/x.secret");
  CHECK(c.limits.socket_hwm == 500);
  CHECK(c.limits.allow_non_finite);
  CHECK(c.limits.server_memory_bytes == 1048576);
  CHECK(c.limits.socket_buffer_bytes == 0);
  CHECK(c.cluster.progress_timeout_s == 0);
  for (const char* bad : {"limits: {socket_hwm: 0}", "limits: {nonsense: 1}", "security: {key: x}",
                          "limits: {socket_buffer_bytes: -1}",
                          "limits: {socket_buffer_bytes: 2147483648}",
                          "limits: {socket_buffer_bytes: 1024}",  // stalled the job
                          "limits: {socket_buffer_bytes: 65535}",
                          "cluster: {workers: 65536}", "cluster: {servers: 5000}"}) {
    INFO(bad);
    CHECK_THROWS_AS(parse_config(bad, "job.yaml"), ConfigError);
  }
}

TEST_CASE("every socket gets limits.socket_hwm and limits.socket_buffer_bytes", "[config]") {
  zmq::context_t ctx(1);
  Config c = parse_config("limits: {socket_hwm: 700, socket_buffer_bytes: 1048576}", "job.yaml");
  zmq::socket_t set = make_dealer(ctx, "w", socket_options(c.limits, nullptr));
  CHECK(set.get(zmq::sockopt::sndhwm) == 700);
  CHECK(set.get(zmq::sockopt::rcvhwm) == 700);
  CHECK(set.get(zmq::sockopt::sndbuf) == 1048576);
  CHECK(set.get(zmq::sockopt::rcvbuf) == 1048576);
  c = parse_config("limits: {socket_buffer_bytes: 0}", "job.yaml");
  zmq::socket_t os = make_router(ctx, socket_options(c.limits, nullptr));
  CHECK(os.get(zmq::sockopt::sndbuf) == -1);  // ZeroMQ's "leave the OS's default"
  CHECK(os.get(zmq::sockopt::rcvbuf) == -1);
}

TEST_CASE("CURVE keys derive deterministically from the job secret", "[curve][security]") {
  const CurveKeys a = derive_curve_keys("sixteen bytes at least, of secret");
  const CurveKeys b = derive_curve_keys("sixteen bytes at least, of secret");
  const CurveKeys other = derive_curve_keys("sixteen bytes at least, of another");
  CHECK(a.server_public == b.server_public);
  CHECK(a.client_secret == b.client_secret);
  CHECK(a.server_public.size() == 40);
  CHECK(a.server_public != a.client_public);
  CHECK(a.server_public != other.server_public);
  CHECK(a.client_public != other.client_public);
  CHECK_THROWS_AS(derive_curve_keys("short"), ConfigError);
  SecurityConfig none;
  none.curve = true;
  CHECK_THROWS_AS(load_curve_keys(none), ConfigError);
}

TEST_CASE("a secret file that is a FIFO or missing is refused at once, naming why",
          "[curve][security]") {
  // A FIFO blocked the daemon in open() for ever; a missing file said only "cannot read".
  std::string dir = (std::filesystem::temp_directory_path() / "psrt-secret-XXXXXX").string();
  REQUIRE(::mkdtemp(dir.data()) != nullptr);
  SecurityConfig fifo;
  fifo.curve = true;
  fifo.secret_file = dir + "/fifo.key";
  REQUIRE(::mkfifo(fifo.secret_file.c_str(), 0600) == 0);
  CHECK_THROWS_WITH(load_curve_keys(fifo), Catch::Contains("is not a regular file"));
  SecurityConfig missing = fifo;
  missing.secret_file = dir + "/none.key";
  CHECK_THROWS_WITH(load_curve_keys(missing), Catch::Contains("No such file or directory"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("a peer's reply budget refills with time and peers are separate", "[limits]") {
  PeerBudget budget(10);
  const auto t0 = PeerBudget::Clock::now();
  int allowed = 0;
  for (int i = 0; i < 100; ++i) allowed += budget.allow("a", t0) ? 1 : 0;
  CHECK(allowed == 10);
  CHECK(budget.dropped() == 90);
  CHECK(budget.allow("b", t0));
  CHECK_FALSE(budget.allow("a", t0 + std::chrono::milliseconds(50)));
  CHECK(budget.allow("a", t0 + std::chrono::milliseconds(150)));
}

TEST_CASE("warnings beyond the rate are counted, not written", "[limits]") {
  LogLimiter log(3);
  const auto t0 = LogLimiter::Clock::now();
  for (int i = 0; i < 50; ++i) log.warn("kind", "line", t0);
  CHECK(log.suppressed() == 47);
  log.warn("other", "line", t0);
  CHECK(log.suppressed() == 47);
  log.flush(t0 + std::chrono::seconds(2));
  log.warn("kind", "line", t0 + std::chrono::seconds(2));
  CHECK(log.suppressed() == 47);
}

TEST_CASE("identities parse, and peer bytes print escaped and bounded", "[wire][security]") {
  const std::string id = process_identity(wire::WORKER, 7);
  wire::Role role;
  uint32_t rank = 0;
  REQUIRE(parse_identity(id, role, rank));
  CHECK(role == wire::WORKER);
  CHECK(rank == 7);
  CHECK(id != process_identity(wire::WORKER, 7));
  CHECK(parse_identity("s2", role, rank));
  CHECK(rank == 2);
  CHECK_FALSE(parse_identity("w1.short", role, rank));
  CHECK_FALSE(parse_identity("x1.0123456789abcdef", role, rank));
  CHECK(printable(std::string("a\nb\xff", 4)) == "a\\x0ab\\xff");
  CHECK(printable(std::string(100, 'j'), 8) == "jjjjjjjj...");
}
