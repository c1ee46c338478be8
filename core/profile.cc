#include "core/profile.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "core/status.h"
#include "core/yaml_reader.h"

namespace psrt {

namespace {

YAML::Node load_yaml(const std::string& text, const std::string& where) {
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw ConfigError(where + ": not valid YAML: " + e.what());
  }
}

// Layer names to indices, for `inputs` (which may name later layers: a cycle is caught afterwards).
std::map<std::string, uint32_t> layer_names(const YAML::Node& layers, const std::string& where) {
  std::map<std::string, uint32_t> names;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const std::string name = layers[i].IsMap() && layers[i]["name"]
                                 ? layers[i]["name"].as<std::string>("")
                                 : "layer" + std::to_string(i);
    if (!names.emplace(name, static_cast<uint32_t>(i)).second) {
      throw ConfigError(where + ": layers[" + std::to_string(i) + "]: layer name '" + name +
                        "' used twice");
    }
  }
  return names;
}

// `inputs: [a, b]` (names of producing layers; "input" is the model's input). Absent: the previous
// layer.
void read_inputs(const YamlReader& lr, const std::map<std::string, uint32_t>& names,
                 LayerDesc& layer) {
  lr.mark_used("inputs");
  if (!lr.has("inputs")) return;
  const YAML::Node in = lr.node()["inputs"];
  if (!in.IsSequence()) lr.fail("inputs", "must be a list of layer names");
  if (in.size() == 0) layer.reads_input = true;
  for (const auto& item : in) {
    const std::string name = item.IsScalar() ? item.as<std::string>() : "";
    if (name == "input") {
      layer.reads_input = true;
      continue;
    }
    const auto it = names.find(name);
    if (it == names.end()) {
      lr.fail("inputs", "layer '" + layer.name + "' reads '" + name + "', which is no layer");
    }
    layer.inputs.push_back(it->second);
  }
}

// Returns the elements of the layer's tensors (at most 4096 of 2^40 each: no overflow).
uint64_t parse_layer(const YamlReader& lr, std::size_t i,
                     const std::map<std::string, uint32_t>& names, double scale,
                     const std::string& where, ModelDesc& model,
                     std::set<std::string>& tensor_names) {
  LayerDesc layer;
  layer.name = lr.get_string("name", "layer" + std::to_string(i));
  layer.kind = lr.get_string("kind", "");
  read_inputs(lr, names, layer);
  layer.forward_ms = lr.get_double("forward_ms", 0, 0, 1e7) * scale;
  layer.backward_ms = lr.get_double("backward_ms", 0, 0, 1e7) * scale;
  // Scaled past a steady clock's range (int64 ns: 9.2e12 ms), a replayed layer took no time.
  constexpr double kMaxScaledMs = 1e9;  // 11.6 days
  for (const auto& [key, ms] : {std::pair{"forward_ms", layer.forward_ms},
                                std::pair{"backward_ms", layer.backward_ms}}) {
    if (ms > kMaxScaledMs) {
      lr.fail(key, "times the scale is " + std::to_string(ms) + " ms, more than 1e9 ms");
    }
  }
  layer.forward_flops = lr.get_double("forward_flops", 0, 0, 1e18);
  layer.activation_elements =
      uint64_t(lr.get_int("activation_elements", 0, 0, int64_t(kMaxElements)));
  std::vector<std::pair<std::string, uint64_t>> tensors;
  uint64_t elements_sum = 0;
  if (lr.has("tensors")) {
    const YAML::Node tn = lr.node()["tensors"];
    if (!tn.IsSequence()) lr.fail("tensors", "must be a list");
    for (std::size_t j = 0; j < tn.size(); ++j) {
      YamlReader tr(tn[j], lr.full("tensors[" + std::to_string(j) + "]"), where);
      const std::string name = tr.get_string("name", layer.name + "." + std::to_string(j));
      // It names the tensor in logs, plans and written profiles: two of one name were accepted.
      if (!tensor_names.insert(name).second) tr.fail("name", "names another tensor already");
      const int64_t elements = tr.get_int("elements", 0, 1, int64_t(kMaxElements));
      if (!tr.has("elements")) tr.fail("elements", "is required");
      tr.reject_unknown();
      const double scaled = std::max(1.0, std::round(double(elements) * scale));
      if (scaled > double(kMaxElements)) {
        tr.fail("elements", "times the scale is over " + std::to_string(kMaxElements));
      }
      tensors.emplace_back(name, uint64_t(scaled));
      elements_sum += uint64_t(scaled);
    }
  }
  lr.mark_used("tensors");
  lr.reject_unknown();
  model.add_layer(std::move(layer), tensors);
  return elements_sum;
}

}  // namespace

ModelDesc parse_profile(const std::string& yaml_text, const std::string& where, double scale) {
  YamlReader root(load_yaml(yaml_text, where), "", where);
  ModelDesc model;
  model.name = root.get_string("name", "profile");
  root.get_string("description", "");
  root.get_string("source", "");
  root.get_string("formula", "");
  model.batch_size = static_cast<uint32_t>(root.get_int("batch_size", 0, 0, 1 << 20));
  model.device_gflops = root.get_double("device_gflops", 0, 0, 1e9);
  const double file_scale = root.get_double("scale", 1.0, kMinProfileScale, 1e9);
  if (!std::isfinite(scale)) {  // NaN passed `scale <= 0` and reached the simulator's clock
    throw ConfigError(where + ": the scale " + std::to_string(scale) + " is not a number");
  }
  // 1e-300 made every tensor one element and every time zero: psrt-sim printed a link bound
  // 7.9e303 times the compute.
  if (scale > 0 && scale < kMinProfileScale) {
    char text[64];
    std::snprintf(text, sizeof text, "%g is below %g", scale, kMinProfileScale);
    throw ConfigError(where + ": the scale " + text + " (every tensor would be one element and "
                      "every time nothing)");
  }
  if (scale <= 0) scale = file_scale;
  // A written profile's sizes are already scaled by this (profile_yaml): recorded, not applied.
  model.scale = scale * root.get_double("scaled_by", 1.0, 1e-12, 1e12);
  if (!root.has("layers") || !root.node()["layers"].IsSequence() ||
      root.node()["layers"].size() == 0) {
    root.fail("layers", "must be a non-empty list");
  }
  root.mark_used("layers");
  const YAML::Node layers = root.node()["layers"];
  const auto names = layer_names(layers, where);
  uint64_t total = 0;
  std::set<std::string> tensor_names;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    try {
      const YamlReader lr(layers[i], "layers[" + std::to_string(i) + "]", where);
      total += parse_layer(lr, i, names, scale, where, model, tensor_names);
    } catch (const ConfigError& e) {
      std::string name = layers[i].IsMap() && layers[i]["name"]
                             ? layers[i]["name"].as<std::string>("").substr(0, 64)
                             : "layer" + std::to_string(i);
      for (char& c : name) {  // the error line is one line: a NUL or a newline went out raw
        if (control_character(std::string_view(&c, 1))) c = '?';
      }
      throw ConfigError(std::string(e.what()) + " (layer '" + name + "')");
    }
    if (total > kMaxElements) {
      throw ConfigError(where + ": the profile's tensors hold over " +
                        std::to_string(kMaxElements) + " elements (by layer " +
                        std::to_string(i) + ")");
    }
  }
  root.reject_unknown();
  topological_order(model, where);  // rejects cycles, naming a layer on one
  if (model.tensors.empty()) throw ConfigError(where + ": profile has no parameter tensors");
  return model;
}

std::string profile_yaml(const ModelDesc& model) {
  YAML::Emitter out;
  out.SetDoublePrecision(17);
  out << YAML::BeginMap << YAML::Key << "name" << YAML::Value << model.name;
  out << YAML::Key << "batch_size" << YAML::Value << model.batch_size;
  out << YAML::Key << "device_gflops" << YAML::Value << model.device_gflops;
  out << YAML::Key << "scale" << YAML::Value << 1.0;
  if (model.scale != 1.0) out << YAML::Key << "scaled_by" << YAML::Value << model.scale;
  out << YAML::Key << "layers" << YAML::Value << YAML::BeginSeq;
  for (const LayerDesc& l : model.layers) {
    out << YAML::BeginMap << YAML::Key << "name" << YAML::Value << l.name;
    if (!l.kind.empty()) out << YAML::Key << "kind" << YAML::Value << l.kind;
    out << YAML::Key << "forward_ms" << YAML::Value << l.forward_ms;
    out << YAML::Key << "backward_ms" << YAML::Value << l.backward_ms;
    out << YAML::Key << "forward_flops" << YAML::Value << l.forward_flops;
    out << YAML::Key << "activation_elements" << YAML::Value << l.activation_elements;
    out << YAML::Key << "inputs" << YAML::Value << YAML::Flow << YAML::BeginSeq;
    if (l.reads_input || l.inputs.empty()) out << "input";
    for (uint32_t in : l.inputs) out << model.layers.at(in).name;
    out << YAML::EndSeq;
    if (!l.tensors.empty()) {
      out << YAML::Key << "tensors" << YAML::Value << YAML::BeginSeq;
      for (uint32_t key : l.tensors) {
        const TensorDesc& t = model.tensors.at(key);
        out << YAML::Flow << YAML::BeginMap << YAML::Key << "name" << YAML::Value << t.name
            << YAML::Key << "elements" << YAML::Value << t.num_elements << YAML::EndMap;
      }
      out << YAML::EndSeq;
    }
    out << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

ModelDesc load_profile(const std::string& path, double scale) {
  constexpr uint64_t kMaxProfileBytes = 256ull << 20;
  return parse_profile(
      read_yaml_file(path, "a model profile (model.profile, --profile)", kMaxProfileBytes), path,
      scale);
}

}  // namespace psrt
