#include "core/metrics.h"

#include <prometheus/counter.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <array>
#include <map>
#include <mutex>
#include <sstream>

#include "core/metrics_http.h"
#include "core/status.h"

namespace psrt {

std::string metrics_url(const std::string& host, int port) {
  const bool ipv6 = host.find(':') != std::string::npos;
  return "http://" + (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port) + "/metrics";
}

namespace {

using prometheus::BuildCounter;
using prometheus::BuildHistogram;

// 10 us .. ~10 s, four buckets a decade.
prometheus::Histogram::BucketBoundaries time_buckets() {
  prometheus::Histogram::BucketBoundaries b;
  for (double v = 1e-5; v < 20; v *= 1.778279) b.push_back(v);
  return b;
}

const char* dir_name(Metrics::Dir d) { return d == Metrics::Dir::kSent ? "sent" : "received"; }
const char* kind_name(Metrics::Kind k) {
  switch (k) {
    case Metrics::Kind::kPush: return "push";
    case Metrics::Kind::kParams: return "params";
    case Metrics::Kind::kAck: return "ack";
    case Metrics::Kind::kActivation:
      return "activation";
    case Metrics::Kind::kControl: return "control";
  }
  return "control";
}

}  // namespace

struct Metrics::Impl {
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  std::unique_ptr<MetricsHttpServer> http;
  // [dir][kind]
  std::array<std::array<prometheus::Counter*, 5>, 2> messages{}, bytes{};
  prometheus::Histogram* round_trip = nullptr;
  prometheus::Histogram* queue_wait = nullptr;
  prometheus::Histogram* iteration = nullptr;
  prometheus::Counter* lost = nullptr;
  prometheus::Family<prometheus::Counter>* errors = nullptr;
  std::mutex errors_mu;  // Family::Add is thread-safe, the cache below is not
  std::map<std::string, prometheus::Counter*> error_by_kind;
  int port = 0;
};

Metrics::Metrics() = default;
Metrics::Metrics(Metrics&&) noexcept = default;
Metrics& Metrics::operator=(Metrics&&) noexcept = default;
Metrics::~Metrics() = default;

Metrics Metrics::serve(const MetricsConfig& config, const std::string& role, int rank, int index) {
  Metrics m;
  if (config.port < 0) return m;
  auto impl = std::make_unique<Impl>();
  const prometheus::Labels who{{"role", role}, {"rank", std::to_string(rank)}};
  auto& reg = *impl->registry;
  auto& messages = BuildCounter().Name("psrt_messages_total")
                       .Help("Messages by direction and type").Labels(who).Register(reg);
  auto& bytes = BuildCounter().Name("psrt_payload_bytes_total")
                    .Help("Payload bytes by direction and type").Labels(who).Register(reg);
  for (auto d : {Dir::kSent, Dir::kReceived}) {
    for (auto k : {Kind::kPush, Kind::kParams, Kind::kAck, Kind::kActivation, Kind::kControl}) {
      const prometheus::Labels l{{"direction", dir_name(d)}, {"type", kind_name(k)}};
      impl->messages[int(d)][int(k)] = &messages.Add(l);
      impl->bytes[int(d)][int(k)] = &bytes.Add(l);
    }
  }
  auto histogram = [&](const char* name, const char* help) {
    return &BuildHistogram().Name(name).Help(help).Labels(who).Register(reg).Add({},
                                                                                 time_buckets());
  };
  impl->round_trip = histogram("psrt_chunk_round_trip_seconds",
                               "A pushed chunk from its send to the server's acknowledgement");
  impl->queue_wait = histogram("psrt_push_queue_wait_seconds",
                               "A gradient chunk from the scheduler's queue to the wire "
                               "(waiting for credit or a more urgent chunk)");
  impl->iteration = histogram("psrt_iteration_seconds", "One training iteration of a worker");
  impl->lost = &BuildCounter().Name("psrt_lost_peers_total")
                    .Help("Peers declared lost (the job then aborts)").Labels(who).Register(reg)
                    .Add({});
  impl->errors = &BuildCounter().Name("psrt_errors_total")
                      .Help("Rejected messages and failures by kind").Labels(who).Register(reg);
  const int port = config.port == 0 ? 0 : config.port + (config.per_process_ports ? index : 0);
  std::weak_ptr<prometheus::Registry> registry = impl->registry;
  impl->http = std::make_unique<MetricsHttpServer>(config.host, port, [registry] {
    std::ostringstream out;
    if (auto r = registry.lock()) prometheus::TextSerializer().Serialize(out, r->Collect());
    return out.str();
  });
  impl->port = impl->http->port();
  m.impl_ = std::move(impl);
  return m;
}

int Metrics::port() const { return impl_ ? impl_->port : 0; }

void Metrics::message(Dir dir, Kind kind, uint64_t payload_bytes) {
  if (!impl_) return;
  impl_->messages[int(dir)][int(kind)]->Increment();
  impl_->bytes[int(dir)][int(kind)]->Increment(double(payload_bytes));
}

void Metrics::round_trip(double seconds) {
  if (impl_) impl_->round_trip->Observe(seconds);
}
void Metrics::queue_wait(double seconds) {
  if (impl_) impl_->queue_wait->Observe(seconds);
}
void Metrics::iteration(double seconds) {
  if (impl_) impl_->iteration->Observe(seconds);
}
void Metrics::lost_peer() {
  if (impl_) impl_->lost->Increment();
}

void Metrics::error(const std::string& kind) {
  if (!impl_) return;
  std::lock_guard lock(impl_->errors_mu);
  auto& c = impl_->error_by_kind[kind];
  if (!c) c = &impl_->errors->Add({{"kind", kind}});
  c->Increment();
}

}  // namespace psrt
