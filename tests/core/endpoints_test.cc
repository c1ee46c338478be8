// Where a server listens and what it advertises (bind vs advertise, port ranges, wildcards), the
// environment's cluster overrides, and the start-up error for a coordinator that never answers.
#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "config/job_config.h"
#include "config/job_env.h"
#include "core/config.h"
#include "core/endpoints.h"
#include "core/status.h"
#include "core/transport.h"

using namespace psrt;

namespace {

std::string port_of(const std::string& endpoint) {
  std::string host;
  int port = -1;
  REQUIRE(split_tcp_endpoint(endpoint, host, port));
  return std::to_string(port);
}

// A port that is free now: bound by a plain socket, never listened on, closed at once.
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  socklen_t len = sizeof a;
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  ::close(fd);
  return ntohs(a.sin_port);
}

bool ipv6_loopback() {
  const int fd = ::socket(AF_INET6, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_addr = in6addr_loopback;
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

}  // namespace

TEST_CASE("tcp endpoints split into host and port", "[endpoints]") {
  std::string host;
  int port = -1;
  CHECK(split_tcp_endpoint("tcp://10.0.0.1:5555", host, port));
  CHECK(host == "10.0.0.1");
  CHECK(port == 5555);
  CHECK(split_tcp_endpoint("tcp://[::1]:7", host, port));
  CHECK(host == "::1");
  CHECK(split_tcp_endpoint("tcp://h:*", host, port));
  CHECK(port == 0);
  CHECK_FALSE(split_tcp_endpoint("ipc://x", host, port));
  CHECK_FALSE(split_tcp_endpoint("tcp://h:99999", host, port));
  CHECK_FALSE(split_tcp_endpoint("tcp://h:", host, port));
  CHECK(connect_endpoint_problem("tcp://h:1").empty());
  CHECK_THAT(connect_endpoint_problem("tcp://h:*"), Catch::Contains("'tcp://h:*' is not"));
  CHECK_FALSE(connect_endpoint_problem("h:1").empty());
  CHECK(connect_endpoint_problem(std::string(5000, 'x')).size() < 300);
  CHECK(is_wildcard_host("0.0.0.0"));
  // A listener peers on other hosts could not reach (a stage worker bound to the default).
  CHECK_THAT(loopback_warning("worker 1", "tcp://127.0.0.1:4000", "tcp://a:29500"),
             Catch::Contains("worker 1 listens at tcp://127.0.0.1:4000, a loopback address") &&
                 Catch::Contains("PSRT_BIND_HOST"));
  CHECK(loopback_warning("worker 1", "tcp://127.0.0.1:4000", "tcp://127.0.0.1:29500").empty());
  CHECK(loopback_warning("worker 1", "tcp://10.0.0.2:4000", "tcp://a:29500").empty());
  CHECK(loopback_warning("server 1", "tcp://[::1]:4000", "tcp://localhost:1").empty());
  CHECK(is_wildcard_host("*"));
  CHECK_FALSE(is_wildcard_host("127.0.0.1"));
}

TEST_CASE("a server binds one address and advertises another", "[endpoints]") {
  zmq::context_t ctx(1);
  ClusterConfig c;
  SECTION("defaults: bound = advertised, on loopback") {
    zmq::socket_t s(ctx, zmq::socket_type::router);
    const auto a = listen_as_server(s, c, 1);
    CHECK(a.bound.rfind("tcp://127.0.0.1:", 0) == 0);
    CHECK(a.advertised == a.bound);
  }
  SECTION("wildcard bind, explicit advertise: the port stays, the host is the advertised one") {
    c.bind_host = "0.0.0.0";
    c.advertise_host = "node7.example";
    zmq::socket_t s(ctx, zmq::socket_type::router);
    const auto a = listen_as_server(s, c, 1);
    CHECK(a.bound.rfind("tcp://0.0.0.0:", 0) == 0);
    CHECK(a.advertised == "tcp://node7.example:" + port_of(a.bound));
  }
  SECTION("server 0 binds the coordinator's port on every interface and keeps its host") {
    const std::string port = std::to_string(free_port());
    c.bind_host = "0.0.0.0";
    c.coordinator = "tcp://127.0.0.1:" + port;
    zmq::socket_t s(ctx, zmq::socket_type::router);
    const auto a = listen_as_server(s, c, 0);
    CHECK(port_of(a.bound) == port);
    CHECK(a.advertised == c.coordinator);
  }
  SECTION("a port range: the first free port, and an error naming the range when none is") {
    zmq::socket_t first(ctx, zmq::socket_type::router);
    first.bind("tcp://127.0.0.1:*");
    const int taken = std::stoi(port_of(first.get(zmq::sockopt::last_endpoint)));
    c.port_min = c.port_max = taken;
    zmq::socket_t s(ctx, zmq::socket_type::router);
    try {
      listen_as_server(s, c, 1);
      FAIL("a full port range was accepted");
    } catch (const ConfigError& e) {
      CHECK(std::string(e.what()).find("no free port in cluster.port_range") != std::string::npos);
    }
    if (taken < 65535) {
      c.port_max = taken + 1;
      zmq::socket_t t(ctx, zmq::socket_type::router);
      try {
        const auto a = listen_as_server(t, c, 1);
        CHECK(port_of(a.bound) == std::to_string(taken + 1));
      } catch (const ConfigError&) {
        // taken + 1 belongs to someone else on this machine: nothing to check then
      }
    }
  }
  SECTION("the coordinator's port in use is a start-up error naming the address") {
    zmq::socket_t first(ctx, zmq::socket_type::router);
    first.bind("tcp://127.0.0.1:*");
    c.coordinator = first.get(zmq::sockopt::last_endpoint);
    zmq::socket_t s(ctx, zmq::socket_type::router);
    try {
      listen_as_server(s, c, 0);
      FAIL("a taken coordinator port was bound");
    } catch (const ConfigError& e) {
      CHECK(std::string(e.what()).find(c.coordinator) != std::string::npos);
    }
  }
}

TEST_CASE("the environment sets cluster addresses below --set", "[endpoints]") {
  ::setenv("PSRT_COORDINATOR", "tcp://head:29500", 1);
  ::setenv("PSRT_BIND_HOST", "*", 1);
  ::setenv("PSRT_ADVERTISE_HOST", "it's-me", 1);
  std::vector<std::string> sets;
  for (const EnvSet& e : cluster_sets_from_env()) sets.push_back(e.set);
  ::unsetenv("PSRT_COORDINATOR");
  ::unsetenv("PSRT_BIND_HOST");
  ::unsetenv("PSRT_ADVERTISE_HOST");
  Config c = parse_config("cluster: {coordinator: 'tcp://file:1'}\n", "j", sets);
  CHECK(c.cluster.coordinator == "tcp://head:29500");
  CHECK(c.cluster.bind_host == "*");
  CHECK(c.cluster.advertise_host == "it's-me");
  sets.push_back("cluster.coordinator=tcp://cli:2");
  CHECK(parse_config("", "j", sets).cluster.coordinator == "tcp://cli:2");
}

// A bad PSRT_COORDINATOR was blamed on "--set cluster.coordinator='garbage'", which appears in no
// script; psrt-launch did not read the variables at all (its --check said OK).
TEST_CASE("a bad address from the environment is named as the environment's", "[endpoints]") {
  const auto file =
      std::filesystem::temp_directory_path() / ("psrt-env-" + std::to_string(::getpid()) + ".yaml");
  std::ofstream(file) << "job: {id: env}\n";
  ::setenv("PSRT_COORDINATOR", "garbage", 1);
  std::string error;
  try {
    load_config_with_env(file.string(), {});
  } catch (const ConfigError& e) {
    error = e.what();
  }
  CHECK_THAT(error, Catch::Contains("cluster.coordinator: 'garbage'") &&
                        Catch::Contains("(from the environment: PSRT_COORDINATOR=garbage)") &&
                        !Catch::Contains("--set"));
  // A --set of the same key wins, and is what an error would name.
  CHECK(load_config_with_env(file.string(), {"cluster.coordinator=tcp://cli:2"})
            .cluster.coordinator == "tcp://cli:2");
  ::unsetenv("PSRT_COORDINATOR");
  std::filesystem::remove(file);
}

TEST_CASE("cluster and metrics keys are validated", "[endpoints][config]") {
  Config c = parse_config("cluster: {port_range: [30000, 30010]}\nmetrics: {port: 9100}\n", "j");
  CHECK(c.cluster.port_min == 30000);
  CHECK(c.cluster.port_max == 30010);
  CHECK(c.metrics.port == 9100);
  CHECK(parse_config("", "j").metrics.port == -1);
  for (const char* bad : {"cluster: {port_range: [30010, 30000]}", "cluster: {port_range: [1]}",
                          "cluster: {port_range: [0, 10]}", "cluster: {bind_host: ''}",
                          "metrics: {port: 70000}", "metrics: {porte: 1}",
                          "cluster: {workers: 10}\nmetrics: {port: 65530}"}) {
    CHECK_THROWS_AS(parse_config(bad, "j"), ConfigError);
  }
}

TEST_CASE("a coordinator that never answers is named, with whether its host resolves",
          "[endpoints]") {
  const std::string unresolvable = coordinator_unreachable("tcp://no-such-host.invalid:1", 5);
  CHECK(unresolvable.find("tcp://no-such-host.invalid:1") != std::string::npos);
  CHECK(unresolvable.find("does not resolve") != std::string::npos);
  const std::string silent = coordinator_unreachable("tcp://127.0.0.1:1", 5);
  CHECK(silent.find("nothing answered") != std::string::npos);
}

TEST_CASE("host names are bound at their address, and IPv6 addresses work", "[endpoints]") {
  // ZeroMQ binds no host names ("No such device" for localhost), and without ZMQ_IPV6 every IPv6
  // address failed the same way while `::` bound IPv4 only.
  zmq::context_t ctx(1);
  ClusterConfig c;
  SECTION("a host name") {
    c.bind_host = "localhost";
    zmq::socket_t s(ctx, zmq::socket_type::router);
    const auto a = listen_as_server(s, c, 1);
    CHECK(a.bound.rfind("tcp://127.0.0.1:", 0) == 0);
    c.coordinator = "tcp://localhost:0";
    zmq::socket_t s0(ctx, zmq::socket_type::router);
    CHECK(listen_as_server(s0, c, 0).bound.rfind("tcp://127.0.0.1:", 0) == 0);
  }
  SECTION("a name that does not resolve is named") {
    c.bind_host = "no-such-host.invalid";
    zmq::socket_t s(ctx, zmq::socket_type::router);
    CHECK_THROWS_WITH(listen_as_server(s, c, 1),
                      Catch::Contains("cannot bind 'no-such-host.invalid': not an IP address"));
  }
  SECTION("IPv6: the sockets take it where the cluster's addresses are IPv6, and connect") {
    if (!ipv6_loopback()) {
      WARN("no IPv6 loopback on this host: the IPv6 part is not run");
      return;
    }
    c.coordinator = "tcp://[::1]:0";
    c.bind_host = "::1";
    REQUIRE(uses_ipv6(c));
    SocketOptions options;
    options.ipv6 = uses_ipv6(c);
    zmq::socket_t server = make_router(ctx, options);
    const auto a = listen_as_server(server, c, 0);
    CHECK(a.bound.rfind("tcp://[::1]:", 0) == 0);
    zmq::socket_t client = make_dealer(ctx, "w", options);
    client.connect(a.advertised);
    client.send(zmq::str_buffer("hello"), zmq::send_flags::none);
    zmq::message_t id, body;
    server.set(zmq::sockopt::rcvtimeo, 10000);
    REQUIRE(server.recv(id));
    REQUIRE(server.recv(body));
    CHECK(body.to_string() == "hello");
    ClusterConfig v4;
    CHECK_FALSE(uses_ipv6(v4));  // IPv4 jobs keep host names resolving to IPv4
    // Bracketed as in an endpoint ("cannot bind '[::1]'"), and a zone kept (fe80::1%lo was
    // bound without it: "Invalid argument").
    ClusterConfig bracketed = c;
    bracketed.bind_host = "[::1]";
    zmq::socket_t s1 = make_router(ctx, options);
    CHECK(listen_as_server(s1, bracketed, 1).bound.rfind("tcp://[::1]:", 0) == 0);
    ClusterConfig zone = c;
    zone.bind_host = "fe80::1%lo";
    zmq::socket_t s2 = make_router(ctx, options);
    try {
      listen_as_server(s2, zone, 1);
    } catch (const ConfigError& e) {
      CHECK_THAT(e.what(), Catch::Contains("tcp://[fe80::1%lo]:*"));
    }
  }
}
