// The form of a ZeroMQ TCP endpoint, without ZeroMQ: what config checks and tools use to refuse an
// address before a socket would throw on it.
#pragma once

#include <string>

namespace psrt {

// "tcp://host:port" -> host and port ("*": 0); false when `endpoint` is not of that form.
bool split_tcp_endpoint(const std::string& endpoint, std::string& host, int& port);
// Why `endpoint` cannot be connected to ("'x' is not tcp://HOST:PORT ..."); empty when it can.
std::string connect_endpoint_problem(const std::string& endpoint);

}  // namespace psrt
