#include "core/endpoints.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>

#include <spdlog/spdlog.h>

#include "core/status.h"
#include "core/transport.h"

namespace psrt {

namespace {

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') {
    throw ConfigError(
        "cluster.bind_host is a wildcard and the host name is unknown: set "
        "cluster.advertise_host (or PSRT_ADVERTISE_HOST) to the address peers reach this host at");
  }
  return buf;
}

// The bound endpoint with its host replaced by `host` (the port stays).
std::string with_host(const std::string& bound, const std::string& host) {
  std::string h;
  int port = 0;
  if (!split_tcp_endpoint(bound, h, port)) return bound;
  const bool ipv6 = host.find(':') != std::string::npos;
  return "tcp://" + (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

// The address ZeroMQ binds for `host`: "*" for a wildcard, an IP address or an interface name as
// given, and a host name's address (ZeroMQ binds no host names: "localhost" and the coordinator's
// own name failed with "No such device"). Throws ConfigError for a name that does not resolve.
std::string bindable_host(const std::string& host) {
  const auto bracketed = [](const char* ipv6) {
    std::string out = "[";
    out += ipv6;
    out += ']';
    return out;
  };
  if (is_wildcard_host(host)) return "*";
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    return bindable_host(host.substr(1, host.size() - 2));  // "[::1]" as the coordinator has it
  }
  in6_addr any{};
  if (::inet_pton(AF_INET, host.c_str(), &any) == 1) return host;
  if (::inet_pton(AF_INET6, host.c_str(), &any) == 1) return bracketed(host.c_str());
  // A link-local address with its zone (fe80::1%eth0): ZeroMQ binds it as given, the lookup
  // below dropped the zone.
  if (host.find(':') != std::string::npos && host.find('%') != std::string::npos) {
    return bracketed(host.c_str());
  }
  if (::if_nametoindex(host.c_str()) != 0) return host;
  for (const int family : {AF_INET, AF_INET6}) {
    addrinfo hints{};
    hints.ai_family = family;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    if (::getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0 || res == nullptr) continue;
    char text[INET6_ADDRSTRLEN] = {};
    const sockaddr* sa = res->ai_addr;
    const void* addr =
        family == AF_INET
            ? static_cast<const void*>(&reinterpret_cast<const sockaddr_in*>(sa)->sin_addr)
            : static_cast<const void*>(&reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr);
    const bool ok = ::inet_ntop(family, addr, text, sizeof text) != nullptr;
    ::freeaddrinfo(res);
    if (!ok) continue;
    if (family == AF_INET) return text;
    // The job's sockets take IPv6 where its addresses are IPv6 literals (uses_ipv6): a name is
    // not one, and the bind failed with "No such device".
    throw ConfigError("cannot bind '" + host + "': it resolves only to an IPv6 address (" + text +
                      "): give that address, or '::', so that the job's sockets take IPv6");
  }
  throw ConfigError("cannot bind '" + host + "': not an IP address, an interface or a host name " +
                    "that resolves here (use an address of this host, or 0.0.0.0 for every " +
                    "interface)");
}

std::string bind_target(const std::string& host, int port) {
  std::string out = "tcp://";
  out += bindable_host(host);
  out += ':';
  out += port == 0 ? std::string("*") : std::to_string(port);
  return out;
}

// Binds the first free port of [lo, hi] on `host`.
std::string bind_in_range(zmq::socket_t& socket, const std::string& host, int lo, int hi) {
  for (int port = lo; port <= hi; ++port) {
    try {
      socket.bind(bind_target(host, port));
      return socket.get(zmq::sockopt::last_endpoint);
    } catch (const zmq::error_t& e) {
      if (e.num() != EADDRINUSE && e.num() != EACCES) {
        throw ConfigError("cannot bind " + bind_target(host, port) + ": " + e.what());
      }
    }
  }
  throw ConfigError("no free port in cluster.port_range [" + std::to_string(lo) + ", " +
                    std::to_string(hi) + "] on " + host);
}

std::string yaml_quoted(const std::string& v) {
  std::string out = "'";
  for (char c : v) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

void warn_if_unresolvable(const std::string& advertise_host) {
  if (advertise_host.empty() || resolves(advertise_host)) return;
  spdlog::warn("cluster.advertise_host '{}' does not resolve on this host: peers that cannot "
               "resolve it either will never reach this process",
               advertise_host);
}

}  // namespace

bool is_wildcard_host(const std::string& host) {
  return host == "*" || host == "0.0.0.0" || host == "::" || host == "[::]";
}

bool uses_ipv6(const ClusterConfig& cluster) {
  return is_ipv6_endpoint(cluster.coordinator) || is_ipv6_host(cluster.bind_host) ||
         is_ipv6_host(cluster.advertise_host);
}

namespace {
// One process's endpoint in an in-process job (cluster.coordinator inproc://NAME, set by tests
// that run daemons on threads sharing a ZeroMQ context; a job file cannot ask for it): server 0
// at NAME, everyone else at NAME/who.
ListenAddress listen_inproc(zmq::socket_t& socket, const ClusterConfig& cluster,
                            const std::string& who) {
  std::string target = cluster.coordinator;
  if (!who.empty()) {
    std::string name = who;
    for (char& ch : name) ch = ch == ' ' ? '-' : ch;
    target += "/" + name;
  }
  try {
    const std::string bound = bind_endpoint(socket, target);
    return {bound, bound};
  } catch (const zmq::error_t& e) {
    throw ConfigError((who.empty() ? std::string("server 0") : who) + " cannot bind " + target +
                      ": " + e.what());
  }
}
}  // namespace

bool is_inproc(const std::string& endpoint) { return endpoint.rfind("inproc://", 0) == 0; }

ListenAddress listen_as_server(zmq::socket_t& socket, const ClusterConfig& cluster, int rank) {
  if (is_inproc(cluster.coordinator)) {
    return listen_inproc(socket, cluster, rank == 0 ? "" : "server " + std::to_string(rank));
  }
  const bool wildcard = is_wildcard_host(cluster.bind_host);
  ListenAddress out;
  std::string target;
  if (rank == 0) {
    std::string host;
    int port = 0;
    if (!split_tcp_endpoint(cluster.coordinator, host, port)) {
      throw ConfigError("cluster.coordinator '" + cluster.coordinator +
                        "' is not a tcp://host:port endpoint");
    }
    target = bind_target(wildcard ? "*" : host, port);
    try {
      out.bound = bind_endpoint(socket, target);
    } catch (const zmq::error_t& e) {
      throw ConfigError("server 0 cannot bind the coordinator address " + target + ": " + e.what() +
                        (e.num() == EADDRINUSE ? " (is another job using this port?)" : ""));
    }
    std::string bound_host;
    int bound_port = 0;
    if (!wildcard && !is_loopback_host(host) &&
        split_tcp_endpoint(out.bound, bound_host, bound_port) && is_loopback_host(bound_host)) {
      // Debian's "127.0.1.1 HOSTNAME": the coordinator given by this host's name is loopback here.
      spdlog::warn(
          "cluster.coordinator's host '{}' is a loopback address on this host ({}): server "
          "0 listens where no other host reaches it; set cluster.bind_host to 0.0.0.0 (or "
          "this host's address)",
          host, bound_host);
    }
    // Peers already reach server 0 at the coordinator's host.
    const std::string& adv = cluster.advertise_host;
    warn_if_unresolvable(adv);
    out.advertised = !adv.empty() ? with_host(out.bound, adv)
                     : wildcard   ? with_host(out.bound, host)
                                  : out.bound;
    return out;
  }
  return listen_as_peer(socket, cluster, "server " + std::to_string(rank));
}

ListenAddress listen_as_peer(zmq::socket_t& socket, const ClusterConfig& cluster,
                             const std::string& who) {
  if (is_inproc(cluster.coordinator)) return listen_inproc(socket, cluster, who);
  const bool wildcard = is_wildcard_host(cluster.bind_host);
  ListenAddress out;
  std::string target;
  if (cluster.port_min > 0) {
    out.bound = bind_in_range(socket, cluster.bind_host, cluster.port_min, cluster.port_max);
  } else {
    target = bind_target(cluster.bind_host, 0);
    try {
      out.bound = bind_endpoint(socket, target);
    } catch (const zmq::error_t& e) {
      throw ConfigError(who + " cannot bind " + target + ": " + e.what());
    }
  }
  if (!cluster.advertise_host.empty()) {
    warn_if_unresolvable(cluster.advertise_host);
    out.advertised = with_host(out.bound, cluster.advertise_host);
  } else if (wildcard) {
    out.advertised = with_host(out.bound, host_name());
  } else {
    out.advertised = out.bound;
  }
  const std::string warning = loopback_warning(who, out.advertised, cluster.coordinator);
  if (!warning.empty()) spdlog::warn("{}", warning);
  return out;
}

bool resolves(const std::string& host) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0) return false;
  freeaddrinfo(res);
  return true;
}

std::string coordinator_unreachable(const std::string& coordinator, double waited_s) {
  char secs[32];
  std::snprintf(secs, sizeof secs, "%.0f", waited_s);
  // A CURVE handshake that fails (another secret, or CURVE on one side only) is silent too.
  std::string why = "nothing answered there (is server 0 running, is its port open, does "
                    "cluster.coordinator or PSRT_COORDINATOR name it, and do both sides have the "
                    "same security.curve and secret_file?)";
  std::string host;
  int port = 0;
  if (split_tcp_endpoint(coordinator, host, port) && !resolves(host)) {
    why = "its host '" + host + "' does not resolve";
  }
  return "never heard from the coordinator at " + coordinator + " within " + secs + " s: " + why;
}

void check_coordinator_port(const std::string& coordinator) {
  std::string host;
  int port = 0;
  if (!split_tcp_endpoint(coordinator, host, port) || port > 0) return;  // inproc: in-process
  throw ConfigError("cluster.coordinator " + coordinator + ": port 0 lets server 0 take a free "
                    "port, which only psrt-launch tells the others; started by hand, give the "
                    "port server 0 listens on (PSRT_COORDINATOR or --set cluster.coordinator)");
}

std::vector<EnvSet> cluster_sets_from_env() {
  std::vector<EnvSet> sets;
  const std::pair<const char*, const char*> vars[] = {
      {"PSRT_COORDINATOR", "cluster.coordinator"},
      {"PSRT_BIND_HOST", "cluster.bind_host"},
      {"PSRT_ADVERTISE_HOST", "cluster.advertise_host"},
  };
  for (const auto& [var, key] : vars) {
    const char* v = std::getenv(var);
    if (v && *v) sets.push_back({var, v, std::string(key) + "=" + yaml_quoted(v)});
  }
  return sets;
}

}  // namespace psrt
