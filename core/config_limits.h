// The `security:` and `limits:` sections of the job configuration (core/config.h has the structs).
#pragma once

#include <functional>
#include <string>

#include "core/config.h"
#include "core/transport.h"
#include "core/yaml_reader.h"

namespace psrt {

// Most servers and workers a job may have: every server keeps per-worker state for each chunk.
constexpr int kMaxServers = 1024;
constexpr int kMaxWorkers = 1024;

// Reads both sections of `top` into `c`; `resolve` turns a path in the file into a usable one.
void parse_security_and_limits(const YamlReader& top, Config& c,
                               const std::function<std::string(const std::string&)>& resolve);

// 80% of what this machine (or its cgroup) has available now; 0 when neither is known.
uint64_t memory_cap();
// Why `copies` replay workers (on one machine) of a profile of `elements` parameters cannot fit
// `available` bytes with their gradients ("" when they may, or `available` is 0).
std::string replay_memory_problem(const std::string& profile, uint64_t elements, int copies,
                                  uint64_t available);
// The memory a server may give its shard: limits.server_memory_bytes, else 80% of what this
// machine (or its cgroup) has available now; 0 when neither is known.
uint64_t server_memory_cap(const LimitsConfig& limits);

// The options of every socket of a daemon: limits.socket_hwm and limits.socket_buffer_bytes,
// with CURVE keys when security.curve is on (null otherwise).
// `credit_bytes`: the job's byte credit (scheduler.credit_bytes), which bounds what a link holds
// for a full queue (SocketOptions::held_bytes); 0 for a process that sends no data. `ipv6`:
// the cluster's addresses are IPv6 (core/endpoints.h, uses_ipv6).
SocketOptions socket_options(const LimitsConfig& limits, const CurveKeys* curve,
                             uint64_t credit_bytes = 0, bool ipv6 = false);

}  // namespace psrt
