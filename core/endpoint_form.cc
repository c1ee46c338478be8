#include "core/endpoint_form.h"

#include <charconv>

namespace psrt {

bool split_tcp_endpoint(const std::string& endpoint, std::string& host, int& port) {
  if (endpoint.rfind("tcp://", 0) != 0) return false;
  const std::string rest = endpoint.substr(6);
  const auto colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == rest.size()) return false;
  host = rest.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  const std::string p = rest.substr(colon + 1);
  if (p == "*") {
    port = 0;
    return true;
  }
  auto [ptr, ec] = std::from_chars(p.data(), p.data() + p.size(), port);
  return ec == std::errc() && ptr == p.data() + p.size() && port >= 0 && port <= 65535;
}

std::string connect_endpoint_problem(const std::string& endpoint) {
  std::string host;
  int port = 0;
  if (split_tcp_endpoint(endpoint, host, port) && port > 0) return "";
  std::string why = "'";
  why.append(endpoint, 0, 200);
  why += "' is not tcp://HOST:PORT with a port from 1 to 65535";
  return why;
}

bool is_ipv6_host(const std::string& host) {
  return host.find(':') != std::string::npos;
}

bool is_ipv6_endpoint(const std::string& endpoint) {
  std::string host;
  int port = 0;
  return split_tcp_endpoint(endpoint, host, port) && is_ipv6_host(host);
}

bool is_loopback_host(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

std::string loopback_warning(const std::string& who, const std::string& advertised,
                             const std::string& coordinator) {
  std::string mine, theirs;
  int port = 0;
  if (!split_tcp_endpoint(advertised, mine, port) || !is_loopback_host(mine)) return "";
  if (!split_tcp_endpoint(coordinator, theirs, port) || is_loopback_host(theirs)) return "";
  return who + " listens at " + advertised + ", a loopback address, while the coordinator is " +
         "at " + coordinator + ": peers on other hosts cannot reach it; set cluster.bind_host " +
         "(PSRT_BIND_HOST) to 0.0.0.0, or cluster.advertise_host (PSRT_ADVERTISE_HOST)";
}

}  // namespace psrt
