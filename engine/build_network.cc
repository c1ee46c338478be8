// build_network: checks a NetSpec and hands it to its architecture's builder. New architectures
// are added here and in arch_builders.h.
#include <limits>

#include "core/status.h"
#include "engine/arch_builders.h"
#include "engine/net_builder.h"

namespace psrt::engine {
namespace {

void check_positive(const char* key, int value) {
  if (value < 1) {
    throw ConfigError("network spec: " + std::string(key) + " = " + std::to_string(value) +
                      " (must be >= 1)");
  }
}

}  // namespace

ArchLayers mlp_layers(const NetSpec& spec) {
  const auto input = static_cast<std::size_t>(spec.channels) *
                     static_cast<std::size_t>(spec.height) * static_cast<std::size_t>(spec.width);
  std::string name = "mlp-" + std::to_string(input);
  for (const int h : spec.hidden) {
    check_positive("hidden width", h);
    name += '-';  // appended piecewise: g++ 12 warns wrongly (-Wrestrict) on "-" + to_string
    name += std::to_string(h);
  }
  const auto classes = static_cast<std::size_t>(spec.classes);
  name += '-';
  name += std::to_string(classes);
  NetBuilder s(name, spec, true);
  for (const int h : spec.hidden) {
    s.fc(static_cast<std::size_t>(h), LinearInit::kHeNormal);
    s.relu();
  }
  s.fc(classes, LinearInit::kXavierUniform);
  return s.finish(classes);
}

ArchLayers arch_layers(const NetSpec& spec) {
  check_positive("channels", spec.channels);
  check_positive("height", spec.height);
  check_positive("width", spec.width);
  if (spec.classes < 2) {
    throw ConfigError("network spec: classes = " + std::to_string(spec.classes) +
                      " (must be >= 2)");
  }
  const auto input = static_cast<std::size_t>(spec.channels) *
                     static_cast<std::size_t>(spec.height) * static_cast<std::size_t>(spec.width);
  if (input > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
    throw ConfigError("network spec: input of " + std::to_string(input) + " elements is too large");
  }
  ArchLayers arch;
  if (spec.arch == "mlp") {
    arch = mlp_layers(spec);
  } else if (spec.arch == "lenet5") {
    arch = lenet5_layers(spec);
  } else if (spec.arch == "vgg-small") {
    arch = vgg_small_layers(spec);
  } else if (spec.arch == "custom") {
    arch = custom_layers(spec);
  } else {
    throw ConfigError("network spec: unknown arch '" + spec.arch +
                      "' (allowed: mlp, lenet5, vgg-small, custom)");
  }
  return arch;
}

std::unique_ptr<Network> build_network(const NetSpec& spec, uint64_t seed) {
  ArchLayers arch = arch_layers(spec);
  return std::make_unique<Network>(std::move(arch.name), std::move(arch.layers), seed);
}

}  // namespace psrt::engine

namespace psrt::engine {

ModelDesc describe_network(const NetSpec& spec) {
  ArchLayers arch = arch_layers(spec);
  ModelDesc desc;
  desc.name = arch.name;
  for (auto& layer : arch.layers) describe_layer(*layer, desc);
  return desc;
}

}  // namespace psrt::engine
