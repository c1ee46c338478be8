// Where a server listens and the address it tells its peers: on one machine both are the same;
// on a cluster a process may bind every interface (or a container's) and be reached under another
// name (a host name, a pod IP, the address behind NAT). docs/config.md, "Running on a cluster".
#pragma once

#include <zmq.hpp>

#include <string>

#include "core/config.h"
#include "core/endpoint_form.h"

namespace psrt {

struct ListenAddress {
  std::string bound;       // what the socket bound (ZeroMQ's last endpoint)
  std::string advertised;  // what peers connect to
};

// True for the bind_host values that mean "every interface": "*", "0.0.0.0", "::".
bool is_wildcard_host(const std::string& host);

// Whether the job's addresses (coordinator, bind_host, advertise_host) are IPv6: its sockets then
// take IPv6 (SocketOptions::ipv6), and a wildcard bind_host binds both families.
bool uses_ipv6(const ClusterConfig& cluster);

// Whether `endpoint` is ZeroMQ's in-process transport (inproc://): daemons on threads of one
// process sharing a context, as the in-process tests run them.
bool is_inproc(const std::string& endpoint);

// Binds `socket` for server `rank`: server 0 at the coordinator's address (with a wildcard
// bind_host, every interface at the coordinator's port), other servers at bind_host on an
// OS-chosen port or the first free one of cluster.port_range. Throws ConfigError naming the
// address when nothing can be bound. With an inproc:// coordinator, server 0 binds it and
// every other listener binds coordinator + "/" + its name.
ListenAddress listen_as_server(zmq::socket_t& socket, const ClusterConfig& cluster, int rank);
// The same for any other listener (`who` names it in errors: "worker 3"): bind_host on an
// OS-chosen port or the first free one of cluster.port_range.
ListenAddress listen_as_peer(zmq::socket_t& socket, const ClusterConfig& cluster,
                             const std::string& who);

// The start-up error of a process that never heard from the coordinator in `waited_s` seconds:
// names the address and whether its host resolves at all.
std::string coordinator_unreachable(const std::string& coordinator, double waited_s);
// Before a process other than server 0 connects to the coordinator: throws ConfigError for port
// 0, which lets server 0 take a free port but names none a peer could reach (it waited out
// cluster.start_timeout_s). Checked where it connects, after the model and data checks.
void check_coordinator_port(const std::string& coordinator);
// Whether `host` resolves here (getaddrinfo).
bool resolves(const std::string& host);

// A cluster.* override that the environment gives (PSRT_COORDINATOR, PSRT_BIND_HOST,
// PSRT_ADVERTISE_HOST): the variable, its value, and the --set string it stands for (which goes
// before the command line's own --set).
struct EnvSet {
  std::string variable, value, set;
};
std::vector<EnvSet> cluster_sets_from_env();

}  // namespace psrt
