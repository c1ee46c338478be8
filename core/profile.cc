#include "core/profile.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>

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

}  // namespace

ModelDesc parse_profile(const std::string& yaml_text, const std::string& where, double scale) {
  YamlReader root(load_yaml(yaml_text, where), "", where);
  ModelDesc model;
  model.name = root.get_string("name", "profile");
  root.get_string("description", "");
  root.get_string("source", "");
  root.get_string("formula", "");
  root.get_int("batch_size", 0, 0, 1 << 20);
  root.get_double("device_gflops", 0, 0, 1e9);
  const double file_scale = root.get_double("scale", 1.0, 1e-9, 1e9);
  if (scale <= 0) scale = file_scale;
  if (!root.has("layers") || !root.node()["layers"].IsSequence() ||
      root.node()["layers"].size() == 0) {
    root.fail("layers", "must be a non-empty list");
  }
  root.mark_used("layers");
  const YAML::Node layers = root.node()["layers"];
  for (std::size_t i = 0; i < layers.size(); ++i) {
    YamlReader lr(layers[i], "layers[" + std::to_string(i) + "]", where);
    LayerDesc layer;
    layer.name = lr.get_string("name", "layer" + std::to_string(i));
    layer.kind = lr.get_string("kind", "");
    layer.forward_ms = lr.get_double("forward_ms", 0, 0, 1e7) * scale;
    layer.backward_ms = lr.get_double("backward_ms", 0, 0, 1e7) * scale;
    layer.forward_flops = lr.get_double("forward_flops", 0, 0, 1e18);
    layer.activation_elements =
        static_cast<uint64_t>(lr.get_int("activation_elements", 0, 0, INT64_MAX));
    std::vector<std::pair<std::string, uint64_t>> tensors;
    if (lr.has("tensors")) {
      const YAML::Node tn = lr.node()["tensors"];
      if (!tn.IsSequence()) lr.fail("tensors", "must be a list");
      for (std::size_t j = 0; j < tn.size(); ++j) {
        YamlReader tr(tn[j], lr.full("tensors[" + std::to_string(j) + "]"), where);
        const std::string name = tr.get_string("name", layer.name + "." + std::to_string(j));
        const int64_t elements = tr.get_int("elements", 0, 1, INT64_MAX);
        if (!tr.has("elements")) tr.fail("elements", "is required");
        tr.reject_unknown();
        const auto scaled = static_cast<uint64_t>(
            std::max<double>(1.0, std::llround(static_cast<double>(elements) * scale)));
        tensors.emplace_back(name, scaled);
      }
    }
    lr.mark_used("tensors");
    lr.reject_unknown();
    model.add_layer(std::move(layer), tensors);
  }
  root.reject_unknown();
  if (model.tensors.empty()) throw ConfigError(where + ": profile has no parameter tensors");
  return model;
}

ModelDesc load_profile(const std::string& path, double scale) {
  std::ifstream in(path);
  if (!in) throw ConfigError(path + ": cannot open profile");
  std::string text;
  text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return parse_profile(text, path, scale);
}

}  // namespace psrt
