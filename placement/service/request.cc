#include "placement/service/request.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <string>

#include "core/config_limits.h"
#include "core/config_placement.h"
#include "core/status.h"
#include "core/wire.h"
#include "psrt.pb.h"

namespace psrt::placement {

namespace {

bool finite_in(double v, double lo, double hi) { return std::isfinite(v) && v >= lo && v <= hi; }

Status check_link(const wire::LinkInfo& l, const std::string& what) {
  if (!finite_in(l.bytes_per_s(), 1, 1e15) || !finite_in(l.latency_ms(), 0, 1e6)) {
    return Status::error(what +
                         ": bandwidth must be in [1, 1e15] bytes/s and latency in [0, 1e6] ms");
  }
  return Status::ok();
}

Result<ModelDesc> graph_of(const wire::PlaceRequest& m) {
  if (m.layers_size() == 0) return Status::error("the graph has no layers");
  if (m.layers_size() > static_cast<int>(kMaxRequestLayers)) {
    return Status::error("the graph has " + std::to_string(m.layers_size()) +
                         " layers; this placer takes at most " + std::to_string(kMaxRequestLayers));
  }
  if (!finite_in(m.device_gflops(), 0, 1e12)) return Status::error("device_gflops out of range");
  ModelDesc model;
  model.name = m.model().empty() ? "model" : m.model();
  model.device_gflops = m.device_gflops();
  const auto n = static_cast<uint32_t>(m.layers_size());
  for (uint32_t i = 0; i < n; ++i) {
    const auto& g = m.layers(static_cast<int>(i));
    const std::string name = g.name().empty() ? "layer" + std::to_string(i) : g.name();
    if (!finite_in(g.forward_ms(), 0, 1e9) || !finite_in(g.backward_ms(), 0, 1e9)) {
      return Status::error("layer '" + name + "': times must be in [0, 1e9] ms");
    }
    if (g.activation_elements() > (1ull << 40) || g.tensor_elements_size() > 1024) {
      return Status::error("layer '" + name + "': sizes out of range");
    }
    LayerDesc l;
    l.name = name;
    l.kind = g.kind();
    l.forward_ms = g.forward_ms();
    l.backward_ms = g.backward_ms();
    l.activation_elements = g.activation_elements();
    l.reads_input = g.reads_input() || (i == 0 && g.inputs_size() == 0);
    for (uint32_t in : g.inputs()) {
      if (in >= n) return Status::error("layer '" + name + "' reads layer " + std::to_string(in) +
                                        ", which does not exist");
      l.inputs.push_back(in);
    }
    if (l.inputs.empty()) l.reads_input = true;  // no default edge over the wire
    std::vector<std::pair<std::string, uint64_t>> tensors;
    for (int t = 0; t < g.tensor_elements_size(); ++t) {
      const uint64_t e = g.tensor_elements(t);
      if (e == 0 || e > (1ull << 40)) return Status::error("layer '" + name + "': tensor size " +
                                                           std::to_string(e) + " out of range");
      tensors.emplace_back(name + "." + std::to_string(t), e);
    }
    model.add_layer(std::move(l), tensors);
  }
  try {
    topological_order(model, "graph");
  } catch (const ConfigError& e) {
    return Status::error(e.what());
  }
  return model;
}

Result<DeviceSet> devices_of(const wire::PlaceRequest& m) {
  if (m.devices_size() == 0 || m.devices_size() > static_cast<int>(kMaxRequestDevices)) {
    return Status::error("between 1 and " + std::to_string(kMaxRequestDevices) +
                         " devices, not " + std::to_string(m.devices_size()));
  }
  DeviceSet set;
  std::set<std::string> names;
  for (const auto& d : m.devices()) {
    std::string name = d.name().empty() ? "dev" + std::to_string(set.devices.size()) : d.name();
    if (d.memory_bytes() == 0 || !finite_in(d.gflops(), 1e-6, 1e12)) {
      return Status::error("device '" + printable(name, 64) +
                           "': memory must be > 0 and gflops in (0, 1e12]");
    }
    // A plan names its devices: two of one name could not be told apart.
    if (!names.insert(name).second)
      return Status::error("device '" + printable(name, 64) + "' named twice");
    set.devices.push_back({std::move(name), d.memory_bytes(), d.gflops()});
  }
  if (m.has_link()) {
    if (Status s = check_link(m.link(), "link"); !s) return s;
    set.link = {m.link().bytes_per_s(), m.link().latency_ms()};
  }
  set.server_link = set.link;
  if (m.has_server_link()) {
    if (Status s = check_link(m.server_link(), "server_link"); !s) return s;
    set.server_link = {m.server_link().bytes_per_s(), m.server_link().latency_ms()};
  }
  return set;
}

}  // namespace

wire::PlaceRequest to_message(const Request& r) {
  wire::PlaceRequest m;
  m.set_model(r.model.name);
  m.set_device_gflops(r.model.device_gflops);
  for (const auto& l : r.model.layers) {
    auto* g = m.add_layers();
    g->set_name(l.name);
    g->set_kind(l.kind);
    for (uint32_t in : l.inputs) g->add_inputs(in);
    g->set_reads_input(l.reads_input);
    g->set_forward_ms(l.forward_ms);
    g->set_backward_ms(l.backward_ms);
    g->set_activation_elements(l.activation_elements);
    for (uint32_t key : l.tensors) g->add_tensor_elements(r.model.tensors[key].num_elements);
  }
  for (const auto& d : r.devices.devices) {
    auto* x = m.add_devices();
    x->set_name(d.name);
    x->set_memory_bytes(d.memory_bytes);
    x->set_gflops(d.gflops);
  }
  m.mutable_link()->set_bytes_per_s(r.devices.link.bytes_per_s);
  m.mutable_link()->set_latency_ms(r.devices.link.latency_ms);
  m.mutable_server_link()->set_bytes_per_s(r.devices.server_link.bytes_per_s);
  m.mutable_server_link()->set_latency_ms(r.devices.server_link.latency_ms);
  m.set_batch_size(r.setup.batch_size);
  m.set_micro_batches(r.setup.micro_batches);
  m.set_optimizer(optimizer_name(r.setup.optimizer));
  m.set_placer(r.placer);
  m.set_mode(mode_name(r.options.mode));
  m.set_servers(r.options.servers);
  m.set_replicas(r.options.replicas);
  return m;
}

Result<Request> from_message(const wire::PlaceRequest& m) {
  Request r;
  auto model = graph_of(m);
  if (!model) return model.status();
  r.model = std::move(model.value());
  auto devices = devices_of(m);
  if (!devices) return devices.status();
  r.devices = std::move(devices.value());
  if (m.batch_size() < 1 || m.batch_size() > (1u << 20)) {
    return Status::error("batch_size must be in [1, 1048576]");
  }
  if (m.micro_batches() < 1 || m.micro_batches() > m.batch_size()) {
    return Status::error("micro_batches must be in [1, batch_size]");
  }
  r.setup.batch_size = m.batch_size();
  r.setup.micro_batches = m.micro_batches();
  try {
    r.setup.optimizer = parse_optimizer(m.optimizer().empty() ? "momentum" : m.optimizer(),
                                        "optimizer");
  } catch (const ConfigError& e) {
    return Status::error(e.what());
  }
  if (!m.placer().empty()) r.placer = m.placer();
  const auto& names = placer_choices();
  if (std::find(names.begin(), names.end(), r.placer) == names.end()) {
    return Status::error("unknown placer '" + printable(r.placer, 64) + "'");
  }
  // Their exact search is devices x layers^2 steps (2e9 a second here), and the service answers
  // nobody else meanwhile: 20000 layers on 1024 devices took 216 s.
  const double steps = double(r.devices.devices.size()) * double(r.model.layers.size()) *
                       double(r.model.layers.size());
  if ((r.placer == "pipedream" || r.placer == "torchgpipe") && steps > kMaxExactSteps) {
    return Status::error(r.placer + "'s exact search takes devices x layers^2 steps, " +
                         std::to_string(int64_t(steps)) + " here; this placer takes at most " +
                         std::to_string(int64_t(kMaxExactSteps)) + " (netplacer has no such " +
                         "bound)");
  }
  if (r.placer == "annealing" && r.model.layers.size() > kMaxAnnealLayers) {
    return Status::error("annealing is limited to " + std::to_string(kMaxAnnealLayers) +
                         " layers here (it simulates every candidate)");
  }
  if ((r.placer == "annealing" || r.placer == "exhaustive") && m.servers() > kMaxSimSearchServers) {
    return Status::error(r.placer + " is limited to " + std::to_string(kMaxSimSearchServers) +
                         " servers here (it simulates every candidate)");
  }
  const auto mode = parse_mode(m.mode().empty() ? "preemptive" : m.mode());
  if (!mode) return Status::error("mode '" + m.mode() + "' is not a push mode");
  r.options.mode = *mode;
  if (m.servers() > uint32_t(kMaxServers)) {
    return Status::error("servers must be at most " + std::to_string(kMaxServers) + ", not " +
                         std::to_string(m.servers()));
  }
  r.options.servers = std::max(1u, m.servers());
  r.options.replicas = std::max(1u, std::min(m.replicas(), 100000u));
  return r;
}

wire::PlaceReply to_reply(const Plan& plan) {
  wire::PlaceReply m;
  m.set_placer(plan.placer);
  for (uint32_t d : plan.device_of_layer) m.add_device_of_layer(d);
  for (double ms : plan.device_compute_ms) m.add_device_compute_ms(ms);
  for (uint64_t b : plan.device_memory_bytes) m.add_device_memory_bytes(b);
  m.set_cut_bytes(plan.cut_bytes);
  m.set_step_ms(plan.step_ms);
  m.set_search_ms(plan.search_ms);
  return m;
}

Result<Plan> plan_from_reply(const wire::PlaceReply& m, const Request& request) {
  const std::size_t k = request.devices.devices.size();
  if (m.device_of_layer_size() != static_cast<int>(request.model.layers.size()) ||
      m.device_compute_ms_size() != static_cast<int>(k) ||
      m.device_memory_bytes_size() != static_cast<int>(k)) {
    return Status::error("the placer's reply does not match the request's graph and devices");
  }
  // What the plan's readers refuse (core/plan_yaml.cc), and a name that is printed: a reply with
  // NaN times or a name holding escape sequences and newlines was printed as it came (forged log
  // lines), written, and refused only when read back, blaming placement.placer.
  const auto time = [](double ms) { return ms >= 0 && ms <= std::numeric_limits<double>::max(); };
  if (!time(m.step_ms()) || !time(m.search_ms()) ||
      !std::all_of(m.device_compute_ms().begin(), m.device_compute_ms().end(), time)) {
    return Status::error(
        "the placer's reply holds a time that is not one (NaN, negative or "
        "infinite)");
  }
  if (m.cut_bytes() > uint64_t(INT64_MAX)) {
    return Status::error("the placer's reply says " + std::to_string(m.cut_bytes()) +
                         " bytes cut, more than any plan holds");
  }
  if (m.placer().size() > 64 || printable(m.placer(), 64) != m.placer()) {
    return Status::error("the placer's reply names its placer '" + printable(m.placer(), 64) +
                         "': not a name (printable ASCII, at most 64 bytes)");
  }
  Plan plan;
  plan.model = request.model.name;
  plan.placer = m.placer();
  plan.setup = request.setup;
  plan.devices = request.devices;
  for (uint32_t d : m.device_of_layer()) {
    if (d >= k) return Status::error("the placer's reply names device " + std::to_string(d));
    plan.device_of_layer.push_back(d);
  }
  plan.device_compute_ms.assign(m.device_compute_ms().begin(), m.device_compute_ms().end());
  plan.device_memory_bytes.assign(m.device_memory_bytes().begin(), m.device_memory_bytes().end());
  plan.cut_bytes = m.cut_bytes();
  plan.step_ms = m.step_ms();
  plan.search_ms = m.search_ms();
  return plan;
}

}  // namespace psrt::placement
