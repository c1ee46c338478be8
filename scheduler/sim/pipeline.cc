#include "scheduler/sim/pipeline.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "core/config.h"
#include "scheduler/sim/push_link.h"
#include "scheduler/sim/sim_config.h"

namespace psrt::sim {

namespace {

struct Task {
  bool backward;
  uint32_t micro_batch;
  uint32_t layer;
};

// The state of one iteration: per (micro-batch, layer) when things ended or arrived.
class Iteration {
 public:
  Iteration(const ModelDesc& model, const Plan& plan, const std::vector<uint32_t>& order,
            HostCpu& cpu)
      : model_(model), plan_(plan), cpu_(cpu), devices_(plan.devices.devices.size()),
        micro_(plan.setup.micro_batches), n_(model.layers.size()) {
    consumers_.resize(n_);
    for (uint32_t l = 0; l < n_; ++l) {
      for (uint32_t u : model.layers[l].inputs) consumers_[u].push_back(l);
    }
    // A slot per (layer, device of one of its consumers): the only pairs an activation goes
    // to or a gradient comes back from (a dense (layer, device) table would hold micro-batches
    // x layers x devices entries: gigabytes for a thousand devices).
    slots_.resize(n_);
    for (uint32_t u = 0; u < n_; ++u) {
      for (uint32_t v : consumers_[u]) {
        const uint32_t d = plan.device_of_layer[v];
        const auto& have = slots_[u];
        const bool seen = std::any_of(have.begin(), have.end(),
                                      [d](const auto& ds) { return ds.first == d; });
        if (!seen) slots_[u].emplace_back(d, num_slots_++);
      }
    }
    tasks_.resize(devices_);
    for (uint32_t m = 0; m < micro_; ++m) {
      for (uint32_t l : order) tasks_[plan.device_of_layer[l]].push_back({false, m, l});
    }
    for (uint32_t m = 0; m < micro_; ++m) {
      for (auto it = order.rbegin(); it != order.rend(); ++it) {
        tasks_[plan.device_of_layer[*it]].push_back({true, m, *it});
      }
    }
    chan_free_.assign(devices_ * devices_, 0.0);
  }

  // Runs one iteration from the devices' free times; returns each layer's last backward end.
  std::vector<double> run(std::vector<double>& device_free, const std::vector<double>& param_ready,
                          std::vector<double>& busy) {
    act_.assign(static_cast<std::size_t>(micro_) * num_slots_, -1.0);
    grad_.assign(act_.size(), -1.0);
    grad_parts_.assign(act_.size(), 0);
    for (uint32_t m = 0; m < micro_; ++m) {
      for (uint32_t u = 0; u < n_; ++u) {
        for (uint32_t v : consumers_[u]) ++grad_parts_[idx(m, u, dev(v))];
      }
    }
    std::vector<double> last_backward(n_, 0.0);
    std::vector<std::size_t> next(devices_, 0);
    std::size_t left = 0;
    for (const auto& t : tasks_) left += t.size();
    bool progress = true;
    while (left > 0 && progress) {
      progress = false;
      for (uint32_t d = 0; d < devices_; ++d) {
        while (next[d] < tasks_[d].size()) {
          const Task& t = tasks_[d][next[d]];
          const double deps = ready_at(t, d, param_ready);
          if (deps < 0) break;
          const double start = std::max(device_free[d], deps);
          const auto& layer = model_.layers[t.layer];
          const double ms = (t.backward ? layer.backward_ms : layer.forward_ms) *
                            compute_scale(model_, plan_.devices.devices[d]) / micro_;
          device_free[d] = start + ms;
          busy[d] += ms;
          finish(t, d, device_free[d]);
          if (t.backward) last_backward[t.layer] = std::max(last_backward[t.layer], device_free[d]);
          ++next[d];
          --left;
          progress = true;
        }
      }
    }
    if (left > 0) throw std::logic_error("pipeline simulation: tasks wait on each other");
    return last_backward;
  }

 private:
  // The entry of micro-batch m for layer's output on device d (d runs a consumer of layer).
  std::size_t idx(uint32_t m, uint32_t layer, uint32_t d) const {
    for (const auto& [device, slot] : slots_[layer]) {
      if (device == d) return static_cast<std::size_t>(m) * num_slots_ + slot;
    }
    throw std::logic_error("pipeline simulation: no consumer of the layer on that device");
  }
  uint32_t dev(uint32_t layer) const { return plan_.device_of_layer[layer]; }

  // When every input of the task is there (-1: not yet known).
  double ready_at(const Task& t, uint32_t d, const std::vector<double>& param_ready) const {
    double at = 0;
    if (!t.backward) {
      at = param_ready[t.layer];
      for (uint32_t u : model_.layers[t.layer].inputs) {
        if (dev(u) == d) continue;  // same device: earlier in its order
        const double a = act_[idx(t.micro_batch, u, d)];
        if (a < 0) return -1;
        at = std::max(at, a);
      }
      return at;
    }
    for (uint32_t v : consumers_[t.layer]) {
      if (dev(v) == d) continue;
      const double g = grad_[idx(t.micro_batch, t.layer, dev(v))];
      if (g < 0) return -1;
      at = std::max(at, g);
    }
    return at;
  }

  // When the receiving stage has taken the message in.
  double send(uint32_t from, uint32_t to, uint64_t bytes, double at) {
    double& free = chan_free_[from * devices_ + to];
    const Link& link = plan_.devices.between(from, to);
    const double handed = cpu_.take(from, at, cpu_.calibration().worker_send_ms());
    free = std::max(free, handed) + static_cast<double>(bytes) / link.bytes_per_s * 1e3;
    return cpu_.take(to, free + link.latency_ms, cpu_.calibration().worker_receive_ms(bytes));
  }

  void finish(const Task& t, uint32_t d, double end) {
    const uint64_t bytes = 4ull * plan_.setup.micro_batch_size();
    if (!t.backward) {
      for (uint32_t v : consumers_[t.layer]) {
        double& a = act_[idx(t.micro_batch, t.layer, dev(v))];
        if (dev(v) != d && a < 0) {
          a = send(d, dev(v), bytes * model_.layers[t.layer].activation_elements, end);
        }
      }
      return;
    }
    // This backward produced the gradients w.r.t. its inputs: once all of d's consumers of an
    // input u are done, d's part of u's gradient goes back to u's device.
    for (uint32_t u : model_.layers[t.layer].inputs) {
      if (dev(u) == d) continue;
      if (--grad_parts_[idx(t.micro_batch, u, d)] == 0) {
        grad_[idx(t.micro_batch, u, d)] =
            send(d, dev(u), bytes * model_.layers[u].activation_elements, end);
      }
    }
  }

  const ModelDesc& model_;
  const Plan& plan_;
  HostCpu& cpu_;
  uint32_t devices_, micro_, n_;
  std::vector<std::vector<uint32_t>> consumers_;
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> slots_;  // per layer: (device, slot)
  uint32_t num_slots_ = 0;
  std::vector<std::vector<Task>> tasks_;
  std::vector<double> chan_free_, act_, grad_;
  std::vector<uint32_t> grad_parts_;
};

void check(const ModelDesc& model, const Plan& plan, const PipelineOptions& options) {
  if (plan.device_of_layer.size() != model.layers.size()) {
    throw std::invalid_argument("plan has " + std::to_string(plan.device_of_layer.size()) +
                                " layers, the model " + std::to_string(model.layers.size()));
  }
  for (uint32_t d : plan.device_of_layer) {
    if (d >= plan.devices.devices.size()) throw std::invalid_argument("plan names device " +
                                                                      std::to_string(d));
  }
  if (plan.setup.micro_batches < 1 || options.iterations < 1 || options.replicas < 1 ||
      options.servers < 1 || options.chunk_bytes < 1) {
    throw std::invalid_argument("micro_batches, iterations, replicas, servers, chunk_bytes >= 1");
  }
  if (options.host_cores > kMaxHostCores) {
    throw std::invalid_argument("host_cores must be at most " + std::to_string(kMaxHostCores));
  }
}

}  // namespace

PipelineResult simulate_pipeline(const ModelDesc& model, const Plan& plan,
                                 const PipelineOptions& options) {
  check(model, plan, options);
  const uint32_t devices = static_cast<uint32_t>(plan.devices.devices.size());
  const auto order = topological_order(model, model.name);
  HostCpu cpu(devices + options.servers, options.host_cores, options.calibration);
  Iteration iteration(model, plan, order, cpu);
  std::vector<double> device_free(devices, 0.0), param_ready(model.layers.size(), 0.0);
  PipelineResult r;
  const ShardMap built = options.shards ? ShardMap()
                                        : shard_map_for(model, options.servers, options.mode,
                                                        options.chunk_bytes);
  const ShardMap& shards = options.shards ? *options.shards : built;
  if (shards.num_tensors() != model.tensors.size() || shards.num_servers() != options.servers) {
    throw std::invalid_argument("pipeline: the shard map is for another model or server count");
  }
  ServerLinks links;
  links.bytes_per_s = plan.devices.server_link.bytes_per_s;
  links.latency_ms = plan.devices.server_link.latency_ms;
  links.servers = options.servers;
  links.copies = options.replicas;
  links.cpu = &cpu;
  for (uint32_t it = 0; it < options.iterations; ++it) {
    r.device_busy_ms.assign(devices, 0.0);
    const auto grads_done = iteration.run(device_free, param_ready, r.device_busy_ms);
    double end = *std::max_element(device_free.begin(), device_free.end());
    // One item per tensor, pushed by the device that holds its layer.
    std::vector<std::vector<PushItem>> items(devices);
    std::vector<std::vector<uint32_t>> layer_of(devices);
    for (uint32_t l = 0; l < model.layers.size(); ++l) {
      const uint32_t d = plan.device_of_layer[l];
      for (uint32_t key : model.layers[l].tensors) {
        PushItem item{grads_done[l], key, {}};
        for (uint32_t c : shards.tensor_chunks(key)) {
          item.pieces.push_back({shards.chunks()[c].bytes(), shards.chunks()[c].server});
        }
        items[d].push_back(std::move(item));
        layer_of[d].push_back(l);
      }
    }
    for (uint32_t l = 0; l < model.layers.size(); ++l) {
      if (!model.layers[l].tensors.empty()) param_ready[l] = 0;
    }
    const auto back = push_and_return(items, options.mode, links);
    for (uint32_t d = 0; d < devices; ++d) {
      for (std::size_t i = 0; i < back[d].size(); ++i) {
        double& ready = param_ready[layer_of[d][i]];
        ready = std::max(ready, back[d][i]);
        end = std::max(end, back[d][i]);
      }
    }
    r.iteration_end_ms.push_back(end);
  }
  const auto& e = r.iteration_end_ms;
  r.step_ms = e.size() == 1 ? e[0] : e[e.size() - 1] - e[e.size() - 2];
  r.memory = memory_use(model, plan.device_of_layer, devices, plan.setup);
  r.over_memory = memory_violation(r.memory, plan.devices);
  r.fits = r.over_memory.empty();
  r.cut_bytes = cut_bytes(model, plan.device_of_layer, plan.setup.batch_size);
  return r;
}

}  // namespace psrt::sim
