// The form of a ZeroMQ TCP endpoint, without ZeroMQ: what config checks and tools use to refuse an
// address before a socket would throw on it.
#pragma once

#include <string>

namespace psrt {

// "tcp://host:port" -> host and port ("*": 0); false when `endpoint` is not of that form.
bool split_tcp_endpoint(const std::string& endpoint, std::string& host, int& port);
// Why `endpoint` cannot be connected to ("'x' is not tcp://HOST:PORT ..."); empty when it can.
std::string connect_endpoint_problem(const std::string& endpoint);
// Whether `endpoint` (tcp://HOST:PORT) or a bare `host` is an IPv6 address ("::1", "[::1]", "::").
bool is_ipv6_endpoint(const std::string& endpoint);
bool is_ipv6_host(const std::string& host);
// "localhost", 127.x.x.x, "::1".
bool is_loopback_host(const std::string& host);
// The warning for a listener (`who`) that peers are told to reach at `advertised`, a loopback
// address, while the coordinator is on another host's address: peers elsewhere cannot reach it.
// Empty when that is not so.
std::string loopback_warning(const std::string& who, const std::string& advertised,
                             const std::string& coordinator);

}  // namespace psrt
