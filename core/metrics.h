// Prometheus metrics of one daemon (metrics.port in the job file; docs/config.md "metrics"):
// messages and bytes by direction and type, chunk round trips and queue waits, errors by kind,
// iteration times, lost peers. Kept in prometheus-cpp's registry (its counters are atomics, so the
// I/O and compute threads record without locks of ours) and served by MetricsHttpServer on a thread
// of its own. A Metrics made with `off()` records nothing and costs a branch per call.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/config.h"

namespace psrt {

// "http://HOST:PORT/metrics", an IPv6 host in brackets (http://:::19510 was logged for "::").
std::string metrics_url(const std::string& host, int port);

class Metrics {
 public:
  enum class Dir { kSent, kReceived };
  // kActivation: model parallelism's stage-to-stage messages (activations, their gradients and
  // their acknowledgements), which were counted as control traffic.
  enum class Kind { kPush, kParams, kAck, kActivation, kControl };

  static Metrics off() { return Metrics(); }
  // Serves /metrics for process `index` of the job (servers 0..S-1, then workers) at
  // metrics.host : metrics.port (+ index when metrics.per_process_ports). Throws ConfigError when
  // the port cannot be bound. Returns off() when metrics.port is not set.
  static Metrics serve(const MetricsConfig& config, const std::string& role, int rank, int index);

  Metrics(Metrics&&) noexcept;
  Metrics& operator=(Metrics&&) noexcept;
  ~Metrics();

  bool enabled() const { return impl_ != nullptr; }
  int port() const;  // the bound port; 0 when off

  void message(Dir dir, Kind kind, uint64_t payload_bytes);
  void round_trip(double seconds);  // a pushed chunk: sent -> acknowledged
  void queue_wait(double seconds);  // a chunk: handed to the scheduler -> sent (credit, priority)
  void error(const std::string& kind);
  void iteration(double seconds);
  void lost_peer();

 private:
  struct Impl;
  Metrics();
  std::unique_ptr<Impl> impl_;
};

}  // namespace psrt
