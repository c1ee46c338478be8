#include "scheduler/sim/simulator.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <utility>

#include "core/sharding.h"
#include "scheduler/grouping.h"
#include "scheduler/push_queue.h"
#include "scheduler/schedule_policy.h"
#include "scheduler/sim/event_queue.h"
#include "scheduler/sim/network.h"

namespace psrt::sim {

namespace {

// A serial resource (an I/O thread): work queued on it runs one piece at a time.
struct Serial {
  double free = 0;
  double take(double now, double ms) {
    free = std::max(now, free) + ms;
    return free;
  }
};

struct Worker {
  explicit Worker(const SimConfig& c) : push(c.mode, c.credit_bytes) {}
  PushQueue push;
  Serial io;
  std::vector<uint32_t> received;  // per layer: chunks in for the next forward
  std::vector<uint32_t> produced;  // per group: tensors backward produced this iteration
  uint32_t iteration = 0;
  uint32_t layer = 0;
  double blocked_since = -1;  // when the forward began to wait for parameters
  bool forward = true;
  bool busy = false;
  bool done = false;
  bool pump_pending = false;
};

struct Server {
  std::vector<PushQueue> replies;  // one per worker
  std::vector<char> pump_pending;  // per worker
  Serial io;
  double aggregation_free = 0;
};

class Simulation {
 public:
  Simulation(const ModelDesc& model, const SimConfig& config)
      : model_(model),
        config_(config),
        policy_(config.mode),
        shards_(shard_map_for(model, config)),
        grouping_(config.grouping.num_tensors() == 0
                      ? Grouping::singletons(static_cast<uint32_t>(model.tensors.size()))
                      : config.grouping),
        plan_(shards_, grouping_, group_message_bytes(config.credit_bytes)),
        net_(events_, config.workers + config.servers, config.bandwidth_bytes_per_s,
             config.latency_ms) {
    for (uint32_t s = 0; s < config.servers; ++s) {  // exact (unchanged) at weight 1
      net_.set_bandwidth(server_host(s), config.bandwidth_bytes_per_s / config.worker_weight);
    }
    layer_chunks_.assign(model.layers.size(), 0);
    for (const auto& c : shards_.chunks()) ++layer_chunks_[model.tensors[c.key].layer];
    arrived_.assign(plan_.messages().size(), 0);
    for (uint32_t w = 0; w < config.workers; ++w) {
      auto worker = std::make_unique<Worker>(config);
      if (policy_.holds_until_backward_done()) {
        worker->push.expect_tensors(grouping_.num_groups());
      }
      worker->received = layer_chunks_;  // iteration 0 starts with its parameters
      worker->produced.assign(grouping_.num_groups(), 0);
      workers_.push_back(std::move(worker));
    }
    for (uint32_t s = 0; s < config.servers; ++s) {
      Server server;
      for (uint32_t w = 0; w < config.workers; ++w) {
        server.replies.emplace_back(SchedulePolicy::replies(), config.credit_bytes);
      }
      server.pump_pending.assign(config.workers, 0);
      servers_.push_back(std::move(server));
    }
  }

  SimResult run() {
    for (uint32_t w = 0; w < config_.workers; ++w) try_compute(w);
    SimResult r;
    r.events = events_.run();
    for (const auto& w : workers_) {
      if (!w->done) throw std::logic_error("sim: stopped before every worker finished");
    }
    r.iteration_start_ms = starts_;
    r.forward_wait_ms = forward_wait_ms_;
    r.iteration_ms = starts_[starts_.size() - 1] - starts_[starts_.size() - 2];
    r.end_ms = events_.now();
    r.io_work_ms = io_work_ms_;
    r.bounds = lower_bounds(model_, shards_, config_);
    r.chunks = static_cast<uint32_t>(shards_.chunks().size());
    r.messages = static_cast<uint32_t>(plan_.messages().size());
    for (uint32_t h = 0; h < config_.workers + config_.servers; ++h) {
      r.max_link_bytes = std::max({r.max_link_bytes, net_.bytes_sent(h), net_.bytes_received(h)});
    }
    return r;
  }

 private:
  uint32_t server_host(uint32_t s) const { return config_.workers + s; }
  uint32_t layers() const { return static_cast<uint32_t>(model_.layers.size()); }
  const Calibration& cal() const { return config_.calibration; }
  // `ms` of work on an I/O thread from now: after the thread's earlier work and, when the
  // processes share a machine (SimConfig::host_cores), once one of its cores is free.
  double io_take(Serial& io, double ms) {
    if (ms > 0) io_work_ms_ += ms;
    if (cores_.empty() || !(ms > 0)) return io.take(events_.now(), ms);
    const auto core = std::min_element(cores_.begin(), cores_.end());
    const double start = std::max({events_.now(), io.free, *core});
    io.free = *core = start + ms;
    return io.free;
  }

  bool params_ready(const Worker& w, uint32_t layer) const {
    if (policy_.forward_waits_for_all() && layer == 0) return w.received == layer_chunks_;
    return w.received[layer] == layer_chunks_[layer];
  }

  // Starts the worker's next forward or backward step if it may start now.
  void try_compute(uint32_t wi) {
    Worker& w = *workers_[wi];
    if (w.busy || w.done) return;
    const LayerDesc& layer = model_.layers[w.layer];
    if (w.forward) {
      if (!params_ready(w, w.layer)) {
        if (w.blocked_since < 0) w.blocked_since = events_.now();
        return;
      }
      if (w.blocked_since >= 0 && wi == 0) note_wait(w);
      if (w.layer == 0 && wi == 0) starts_.push_back(events_.now());
      w.received[w.layer] = 0;
      w.busy = true;
      events_.at(events_.now() + layer.forward_ms, [this, wi] { forward_done(wi); });
    } else {
      w.busy = true;
      events_.at(events_.now() + layer.backward_ms, [this, wi] { backward_done(wi); });
    }
  }

  // Worker 0's wait for a layer's parameters, kept where it falls in the iteration that
  // iteration_ms measures: the next to last, whose end is the last one's wait for layer 0.
  void note_wait(Worker& w) {
    const uint32_t reported = config_.iterations - (w.layer == 0 ? 1 : 2);
    if (w.iteration == reported) forward_wait_ms_[w.layer] = events_.now() - w.blocked_since;
    w.blocked_since = -1;
  }

  void forward_done(uint32_t wi) {
    Worker& w = *workers_[wi];
    w.busy = false;
    if (w.layer + 1 < layers()) {
      ++w.layer;
    } else {
      w.forward = false;  // backward starts with the last layer
    }
    try_compute(wi);
  }

  // The group's messages, once backward has produced all of its tensors (with a cycle timer, at
  // its next tick).
  void produced(uint32_t wi, uint32_t key) {
    Worker& w = *workers_[wi];
    const uint32_t g = grouping_.group_of(key);
    if (++w.produced[g] < grouping_.end(g) - grouping_.begin(g)) return;
    w.produced[g] = 0;
    const double cycle = config_.release_cycle_ms;
    if (cycle > 0) {
      const double tick = std::ceil(events_.now() / cycle - 1e-9) * cycle;
      events_.at(std::max(tick, events_.now()), [this, wi, g] {
        release(*workers_[wi], g);
        request_push(wi);
      });
      return;
    }
    release(w, g);
  }

  void release(Worker& w, uint32_t g) {
    std::vector<PushUnit> units;
    for (uint32_t id : plan_.group_messages(g)) {
      PushUnit u;
      u.chunk = id;
      u.bytes = plan_.messages()[id].bytes;
      units.push_back(u);
    }
    const uint32_t first = grouping_.begin(g);
    w.push.add(first, first, std::move(units));
  }

  void backward_done(uint32_t wi) {
    Worker& w = *workers_[wi];
    w.busy = false;
    const auto& keys = model_.layers[w.layer].tensors;
    for (auto it = keys.rbegin(); it != keys.rend(); ++it) produced(wi, *it);
    request_push(wi);
    if (w.layer > 0) {
      --w.layer;
    } else if (++w.iteration == config_.iterations) {
      w.done = true;
    } else {
      w.forward = true;
    }
    try_compute(wi);
  }

  // A message as the runtime sends it: one plan message, or a batch of single-chunk ones.
  using Batch = std::vector<PushUnit>;

  // Whether `unit` may join a batch (the runtime's rule: ps_client_send.cc, server_reply_queue.cc).
  bool batchable(const PushUnit& unit) const {
    return plan_.messages()[unit.chunk].chunks.size() == 1 &&
           batchable_bytes(unit.bytes, config_.batch_bytes);
  }

  // Takes what `queue` releases now, in its order, as messages: consecutive batchable units for
  // one peer gather (per peer, as in the runtime) until the next would pass batch_bytes; `send`
  // gets each message and the peer it goes to.
  template <typename PeerOf, typename Send>
  void take_messages(PushQueue& queue, PeerOf peer_of, Send send) {
    struct Open {
      uint32_t peer;
      Batch batch;
      uint64_t bytes = 0;
    };
    std::vector<Open> open;  // the batches gathering, one per peer
    auto flush = [&] {
      for (auto& o : open) send(o.peer, std::move(o.batch));
      open.clear();
    };
    while (auto u = queue.next()) {
      const uint32_t peer = peer_of(*u);
      if (!batchable(*u)) {
        flush();
        send(peer, Batch{*u});
        continue;
      }
      auto it =
          std::find_if(open.begin(), open.end(), [&](const Open& o) { return o.peer == peer; });
      if (it == open.end()) it = open.insert(open.end(), Open{peer, {}, 0});
      if (!it->batch.empty() && (it->bytes + u->bytes > config_.batch_bytes ||
                                 it->batch.size() >= kMaxGroupMembers)) {
        send(peer, std::move(it->batch));
        it->batch.clear();
        it->bytes = 0;
      }
      it->batch.push_back(*u);
      it->bytes += u->bytes;
    }
    flush();
  }

  static uint64_t bytes_of(const Batch& batch) {
    uint64_t b = 0;
    for (const auto& u : batch) b += u.bytes;
    return b;
  }

  void request_push(uint32_t wi) {
    Worker& w = *workers_[wi];
    if (w.pump_pending) return;
    w.pump_pending = true;
    events_.decide([this, wi] {
      Worker& wk = *workers_[wi];
      wk.pump_pending = false;
      const auto server_of = [this](const PushUnit& u) { return plan_.messages()[u.chunk].server; };
      take_messages(wk.push, server_of, [this, &wk, wi](uint32_t s, Batch batch) {
        // The worker's I/O thread builds and hands over the message, then the uplink sends it.
        const double handed = io_take(wk.io, cal().worker_send_ms());
        // Each hop moves the batch on (an action runs once).
        events_.at(handed, [this, s, wi, batch = std::move(batch)]() mutable {
          const uint64_t bytes = bytes_of(batch);
          net_.send(wi, server_host(s), bytes, [this, s, wi, batch = std::move(batch)]() mutable {
            at_server(s, wi, std::move(batch));
          });
        });
      });
    });
  }

  void at_server(uint32_t s, uint32_t wi, Batch batch) {
    Server& server = servers_[s];
    // The server's I/O thread takes the push (checks, copy, ack) before anything else follows.
    const double taken = io_take(
        server.io, config_.worker_weight * cal().server_receive_ms(bytes_of(batch)));
    events_.at(taken, [this, s, wi, batch = std::move(batch)] { taken_by_server(s, wi, batch); });
  }

  void taken_by_server(uint32_t s, uint32_t wi, const Batch& batch) {
    const uint64_t bytes = bytes_of(batch);
    events_.at(events_.now() + config_.ack_latency_ms, [this, wi, bytes] {
      workers_[wi]->push.acked(bytes);
      request_push(wi);
    });
    for (const PushUnit& unit : batch) {
      if (++arrived_[unit.chunk] < config_.workers) continue;
      arrived_[unit.chunk] = 0;
      Server& server = servers_[s];
      const double start = std::max(events_.now(), server.aggregation_free);
      server.aggregation_free = start + aggregation_ms(config_, unit.bytes);
      events_.at(server.aggregation_free, [this, s, unit] {
        for (uint32_t v = 0; v < config_.workers; ++v) {
          PushUnit reply;
          reply.chunk = unit.chunk;
          reply.bytes = unit.bytes;
          servers_[s].replies[v].add(unit.key, unit.key, {reply});
          request_reply(s, v);
        }
      });
    }
  }

  void request_reply(uint32_t s, uint32_t wi) {
    if (servers_[s].pump_pending[wi]) return;
    servers_[s].pump_pending[wi] = 1;
    events_.decide([this, s, wi] {
      Server& server = servers_[s];
      server.pump_pending[wi] = 0;
      take_messages(server.replies[wi], [wi](const PushUnit&) { return wi; },
                    [this, &server, s](uint32_t to, Batch batch) {
                      const double handed =
                          io_take(server.io, config_.worker_weight * cal().server_send_ms());
                      events_.at(handed, [this, s, to, batch = std::move(batch)]() mutable {
                        const uint64_t bytes = bytes_of(batch);
                        net_.send(server_host(s), to, bytes,
                                  [this, s, to, batch = std::move(batch)]() mutable {
                                    at_worker(s, to, std::move(batch));
                                  });
                      });
                    });
    });
  }

  void at_worker(uint32_t s, uint32_t wi, Batch batch) {
    const uint64_t bytes = bytes_of(batch);
    const double taken = io_take(workers_[wi]->io, cal().worker_receive_ms(bytes));
    events_.at(taken, [this, s, wi, batch = std::move(batch), bytes] {
      events_.at(events_.now() + config_.ack_latency_ms, [this, s, wi, bytes] {
        servers_[s].replies[wi].acked(bytes);
        request_reply(s, wi);
      });
      for (const PushUnit& unit : batch) {
        for (uint32_t id : plan_.messages()[unit.chunk].chunks) {
          ++workers_[wi]->received[model_.tensors[shards_.chunks()[id].key].layer];
        }
      }
      try_compute(wi);
    });
  }

  const ModelDesc& model_;
  const SimConfig config_;
  const SchedulePolicy policy_;
  const ShardMap shards_;
  const Grouping grouping_;
  const MessagePlan plan_;
  EventQueue events_;
  Network net_;
  std::vector<uint32_t> layer_chunks_;  // chunks per layer
  std::vector<uint32_t> arrived_;       // per message: workers' copies in for this iteration
  std::vector<double> cores_ = std::vector<double>(config_.host_cores, 0.0);  // when each is free
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<Server> servers_;
  std::vector<double> starts_;
  double io_work_ms_ = 0;
  std::vector<double> forward_wait_ms_ = std::vector<double>(model_.layers.size(), 0.0);
};

}  // namespace

SimResult simulate(const ModelDesc& model, const SimConfig& config) {
  validate(config);
  if (model.tensors.empty() || model.layers.empty()) {
    throw std::invalid_argument("sim: the model has no parameter tensors");
  }
  if (config.grouping.num_tensors() != 0 && config.grouping.num_tensors() != model.tensors.size()) {
    throw std::invalid_argument("sim: the grouping is for another model");
  }
  Simulation sim(model, config);
  return sim.run();
}

}  // namespace psrt::sim
