#include "core/plan_yaml.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <limits>
#include <map>

#include "core/status.h"

namespace psrt {

namespace {

Link read_link(const YamlReader& r, Link fallback) {
  fallback.bytes_per_s = r.get_double("bandwidth_bytes_per_s", fallback.bytes_per_s, 1, 1e15);
  fallback.latency_ms = r.get_double("latency_ms", fallback.latency_ms, 0, 1e6);
  r.reject_unknown();
  return fallback;
}

void emit_link(YAML::Emitter& out, const char* key, const Link& l) {
  out << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginMap;
  out << YAML::Key << "bandwidth_bytes_per_s" << YAML::Value << l.bytes_per_s;
  out << YAML::Key << "latency_ms" << YAML::Value << l.latency_ms << YAML::EndMap;
}

std::map<std::string, uint32_t> device_index(const DeviceSet& set) {
  std::map<std::string, uint32_t> names;
  for (uint32_t d = 0; d < set.devices.size(); ++d) names[set.devices[d].name] = d;
  return names;
}

void read_pairs(const YamlReader& r, DeviceSet& set) {
  r.mark_used("link_pairs");
  if (!r.has("link_pairs")) return;
  const YAML::Node pairs = r.node()["link_pairs"];
  if (!pairs.IsSequence()) r.fail("link_pairs", "must be a list");
  const auto names = device_index(set);
  const std::size_t n = set.devices.size();
  set.pair.assign(n, std::vector<Link>(n, set.link));
  std::map<std::pair<uint32_t, uint32_t>, std::size_t> given;  // a pair, either way: its entry
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    YamlReader pr(pairs[i], r.full("link_pairs[" + std::to_string(i) + "]"), r.where());
    const std::string from = pr.get_string("from", ""), to = pr.get_string("to", "");
    if (!names.count(from)) pr.fail("from", "'" + from + "' is no device");
    if (!names.count(to)) pr.fail("to", "'" + to + "' is no device");
    // A device's traffic to itself crosses no link; a pair given twice kept the later entry.
    if (from == to) pr.fail("to", "'" + to + "' is the device it links from");
    const auto [a, b] = std::minmax(names.at(from), names.at(to));
    if (const auto [it, fresh] = given.emplace(std::pair(a, b), i); !fresh) {
      pr.fail("to", "the link between '" + from + "' and '" + to + "' is given in link_pairs[" +
                        std::to_string(it->second) + "] too (a link serves both ways)");
    }
    const Link l = read_link(pr, set.link);
    set.pair[a][b] = l;
    set.pair[b][a] = l;
  }
}

}  // namespace

DeviceSet read_devices(const YamlReader& r) {
  DeviceSet set;
  r.mark_used("devices");
  const YAML::Node list = r.node()["devices"];
  if (!list || !list.IsSequence() || list.size() == 0)
    r.fail("devices", "must be a non-empty list");
  if (list.size() > 4096) r.fail("devices", "more than 4096 devices");
  for (std::size_t i = 0; i < list.size(); ++i) {
    YamlReader dr(list[i], r.full("devices[" + std::to_string(i) + "]"), r.where());
    Device d;
    d.name = dr.get_string("name", "dev" + std::to_string(i));
    if (d.name.empty()) dr.fail("name", "is empty");
    const double gib = dr.get_double("memory_gib", 0, 0, 1e9);
    d.memory_bytes = static_cast<uint64_t>(
        dr.get_int("memory_bytes", static_cast<int64_t>(gib * 1073741824.0), 1, INT64_MAX));
    d.gflops = dr.get_double("gflops", 0, 1e-6, 1e12);
    if (!dr.has("gflops")) dr.fail("gflops", "is required");
    if (!dr.has("memory_bytes") && !dr.has("memory_gib")) dr.fail("memory_bytes", "is required");
    if (dr.has("memory_bytes") && dr.has("memory_gib")) {
      dr.fail("memory_gib", "give memory_bytes or memory_gib, not both");
    }
    if (d.memory_bytes == 0) dr.fail("memory_gib", "must be more than 0");
    dr.reject_unknown();
    for (const auto& other : set.devices) {
      if (other.name == d.name) dr.fail("name", "'" + d.name + "' used twice");
    }
    set.devices.push_back(d);
  }
  set.link = read_link(r.child("link"), set.link);
  set.server_link = read_link(r.child("server_link"), set.link);
  read_pairs(r, set);
  return set;
}

TrainingSetup read_setup(const YamlReader& r, const TrainingSetup& base) {
  TrainingSetup s = base;
  s.batch_size = static_cast<uint32_t>(r.get_int("batch_size", s.batch_size, 1, 1 << 20));
  s.micro_batches = static_cast<uint32_t>(r.get_int("micro_batches", s.micro_batches, 1, 4096));
  if (s.micro_batches > s.batch_size) r.fail("micro_batches", "is larger than batch_size");
  s.optimizer = parse_optimizer(r.get_string("optimizer", optimizer_name(s.optimizer)),
                                r.full("optimizer"));
  return s;
}

std::vector<Stage> plan_stages(const ModelDesc& model,
                               const std::vector<uint32_t>& device_of_layer) {
  std::vector<Stage> stages;
  std::map<uint32_t, std::size_t> stage_of_device;
  for (uint32_t l : topological_order(model, model.name)) {
    const uint32_t d = device_of_layer[l];
    auto [it, fresh] = stage_of_device.emplace(d, stages.size());
    if (fresh) stages.push_back({d, {}});
    stages[it->second].layers.push_back(l);
  }
  return stages;
}

std::string plan_to_yaml(const Plan& plan, const ModelDesc& model) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "model" << YAML::Value << model.name;
  out << YAML::Key << "placer" << YAML::Value << plan.placer;
  out << YAML::Key << "batch_size" << YAML::Value << plan.setup.batch_size;
  out << YAML::Key << "micro_batches" << YAML::Value << plan.setup.micro_batches;
  out << YAML::Key << "optimizer" << YAML::Value << optimizer_name(plan.setup.optimizer);
  out << YAML::Key << "devices" << YAML::Value << YAML::BeginSeq;
  for (const auto& d : plan.devices.devices) {
    out << YAML::Flow << YAML::BeginMap << YAML::Key << "name" << YAML::Value << d.name;
    out << YAML::Key << "memory_bytes" << YAML::Value << d.memory_bytes;
    out << YAML::Key << "gflops" << YAML::Value << d.gflops << YAML::EndMap;
  }
  out << YAML::EndSeq;
  emit_link(out, "link", plan.devices.link);
  emit_link(out, "server_link", plan.devices.server_link);
  if (!plan.devices.pair.empty()) {
    out << YAML::Key << "link_pairs" << YAML::Value << YAML::BeginSeq;
    const auto& names = plan.devices.devices;
    for (std::size_t a = 0; a < names.size(); ++a) {
      for (std::size_t b = a + 1; b < names.size(); ++b) {
        const Link& l = plan.devices.pair[a][b];
        out << YAML::Flow << YAML::BeginMap << YAML::Key << "from" << YAML::Value << names[a].name
            << YAML::Key << "to" << YAML::Value << names[b].name;
        out << YAML::Key << "bandwidth_bytes_per_s" << YAML::Value << l.bytes_per_s;
        out << YAML::Key << "latency_ms" << YAML::Value << l.latency_ms << YAML::EndMap;
      }
    }
    out << YAML::EndSeq;
  }
  out << YAML::Key << "stages" << YAML::Value << YAML::BeginSeq;
  for (const auto& st : plan_stages(model, plan.device_of_layer)) {
    out << YAML::BeginMap << YAML::Key << "device" << YAML::Value
        << plan.devices.devices[st.device].name;
    out << YAML::Key << "layers" << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (uint32_t l : st.layers) out << model.layers[l].name;
    out << YAML::EndSeq << YAML::EndMap;
  }
  out << YAML::EndSeq;
  out << YAML::Key << "predicted" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "step_ms" << YAML::Value << plan.step_ms;
  out << YAML::Key << "search_ms" << YAML::Value << plan.search_ms;
  out << YAML::Key << "cut_bytes" << YAML::Value << plan.cut_bytes;
  out << YAML::Key << "device_compute_ms" << YAML::Value << YAML::Flow << plan.device_compute_ms;
  out << YAML::Key << "device_memory_bytes" << YAML::Value << YAML::Flow
      << plan.device_memory_bytes;
  out << YAML::EndMap << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

Plan plan_from_yaml(const std::string& text, const std::string& where, const ModelDesc& model) {
  YAML::Node root_node;
  try {
    root_node = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw ConfigError(where + ": not valid YAML: " + e.what());
  }
  YamlReader r(root_node, "", where);
  Plan plan;
  plan.model = r.get_string("model", model.name);
  if (plan.model != model.name) {
    r.fail("model", "the plan is for '" + plan.model + "', the profile is '" + model.name + "'");
  }
  plan.placer = r.get_string("placer", "");
  plan.setup = read_setup(r);
  plan.devices = read_devices(r);
  const auto devices = device_index(plan.devices);
  std::map<std::string, uint32_t> layers;
  for (uint32_t l = 0; l < model.layers.size(); ++l) layers[model.layers[l].name] = l;
  constexpr uint32_t kNone = UINT32_MAX;
  plan.device_of_layer.assign(model.layers.size(), kNone);
  r.mark_used("stages");
  const YAML::Node stages = r.node()["stages"];
  if (!stages || !stages.IsSequence()) r.fail("stages", "must be a list");
  std::map<std::string, std::size_t> stage_on;  // a stage is what one device runs
  for (std::size_t s = 0; s < stages.size(); ++s) {
    YamlReader sr(stages[s], r.full("stages[" + std::to_string(s) + "]"), where);
    const std::string dev = sr.get_string("device", "");
    if (!devices.count(dev)) sr.fail("device", "'" + dev + "' is no device of the plan");
    if (const auto [at, fresh] = stage_on.emplace(dev, s); !fresh) {
      sr.fail("device", "'" + dev + "' runs stages[" + std::to_string(at->second) +
                            "] too: each device runs one stage");
    }
    sr.mark_used("layers");
    const YAML::Node names = sr.node()["layers"];
    if (!names || !names.IsSequence()) sr.fail("layers", "must be a list of layer names");
    if (names.size() == 0) sr.fail("layers", "is empty: a stage runs at least one layer");
    for (const auto& n : names) {
      const std::string name = n.IsScalar() ? n.Scalar() : "";
      const auto it = layers.find(name);
      if (it == layers.end()) sr.fail("layers", "'" + name + "' is no layer of " + model.name);
      if (plan.device_of_layer[it->second] != kNone) {
        sr.fail("layers", "layer '" + name + "' is in two stages");
      }
      plan.device_of_layer[it->second] = devices.at(dev);
    }
    sr.reject_unknown();
  }
  for (uint32_t l = 0; l < model.layers.size(); ++l) {
    if (plan.device_of_layer[l] == kNone) {
      r.fail("stages", "layer '" + model.layers[l].name + "' is in no stage");
    }
  }
  const YamlReader pred = r.child("predicted");
  // Predictions only inform: any finite value psrt-place may write (4.5e17 ms for a slow model
  // on slow devices was once refused by the tools that read the plan back).
  constexpr double kAny = std::numeric_limits<double>::max();
  plan.step_ms = pred.get_double("step_ms", 0, 0, kAny);
  plan.search_ms = pred.get_double("search_ms", 0, 0, kAny);
  plan.cut_bytes = static_cast<uint64_t>(pred.get_int("cut_bytes", 0, 0, INT64_MAX));
  pred.mark_used("device_compute_ms");
  pred.mark_used("device_memory_bytes");
  try {
    if (pred.has("device_compute_ms")) {
      plan.device_compute_ms = pred.node()["device_compute_ms"].as<std::vector<double>>();
      for (double ms : plan.device_compute_ms) {  // NaN and -1 were taken as predictions
        if (!(ms >= 0 && ms <= kAny)) {
          pred.fail("device_compute_ms", "holds " + std::to_string(ms) + ", not a time in ms");
        }
      }
    }
    if (pred.has("device_memory_bytes")) {
      plan.device_memory_bytes = pred.node()["device_memory_bytes"].as<std::vector<uint64_t>>();
    }
  } catch (const YAML::Exception& e) {
    throw ConfigError(where + ": predicted: " + e.what());
  }
  pred.reject_unknown();
  r.reject_unknown();
  return plan;
}

Plan load_plan(const std::string& path, const ModelDesc& model) {
  constexpr uint64_t kMaxPlanBytes = 64ull << 20;
  return plan_from_yaml(read_yaml_file(path, "a placement plan (placement.plan, --placement)",
                                       kMaxPlanBytes),
                        path, model);
}

}  // namespace psrt
