// The convolutional architectures: LeNet-5, the small VGG-style net, and a network written out
// layer by layer (model.arch: custom, core/layer_spec.h).
#include <string>

#include "core/layer_spec.h"
#include "core/status.h"
#include "engine/arch_builders.h"
#include "engine/net_builder.h"

namespace psrt::engine {

ArchLayers lenet5_layers(const NetSpec& spec) {
  NetBuilder s("lenet5", spec);
  s.conv(6, 5, 1, 2);
  s.relu();
  s.pool(2, 2);
  s.conv(16, 5, 1, 0);
  s.relu();
  s.pool(2, 2);
  s.flatten();
  s.fc(120, LinearInit::kHeNormal);
  s.relu();
  s.fc(84, LinearInit::kHeNormal);
  s.relu();
  s.fc(static_cast<std::size_t>(spec.classes), LinearInit::kXavierUniform);
  return s.finish(static_cast<std::size_t>(spec.classes));
}

ArchLayers vgg_small_layers(const NetSpec& spec) {
  NetBuilder s("vgg-small", spec);
  for (const int channels : {32, 64}) {
    s.conv(channels, 3, 1, 1);
    s.relu();
    s.conv(channels, 3, 1, 1);
    s.relu();
    s.pool(2, 2);
  }
  s.flatten();
  s.fc(256, LinearInit::kHeNormal);
  s.relu();
  s.dropout(spec.dropout);
  s.fc(static_cast<std::size_t>(spec.classes), LinearInit::kXavierUniform);
  return s.finish(static_cast<std::size_t>(spec.classes));
}

namespace {

void add_custom(NetBuilder& s, const LayerSpec& l, bool last_fc) {
  switch (l.kind) {
    case LayerSpec::Kind::kConv:
      s.conv(l.out, l.kernel, l.stride, l.pad);
      break;
    case LayerSpec::Kind::kPool:
      s.pool(l.kernel, l.stride);
      break;
    case LayerSpec::Kind::kRelu:
      s.relu();
      break;
    case LayerSpec::Kind::kFc:
      s.fc(std::size_t(l.out), last_fc ? LinearInit::kXavierUniform : LinearInit::kHeNormal);
      break;
    case LayerSpec::Kind::kDropout:
      s.dropout(float(l.p));
      break;
    case LayerSpec::Kind::kFlatten:
      s.flatten();
      break;
  }
}

}  // namespace

// The last fc (the one the loss reads) starts Xavier-uniform, the others He-normal, as in the
// built-in architectures.
ArchLayers custom_layers(const NetSpec& spec) {
  if (spec.layers.empty()) {
    throw ConfigError("model.layers: no layers");
  }
  std::size_t last_fc = spec.layers.size();
  for (std::size_t i = 0; i < spec.layers.size(); ++i) {
    if (spec.layers[i].kind == LayerSpec::Kind::kFc) last_fc = i;
  }
  NetBuilder s("custom", spec);
  for (std::size_t i = 0; i < spec.layers.size(); ++i) {
    try {
      add_custom(s, spec.layers[i], i == last_fc);
    } catch (const ConfigError& e) {  // name the entry as the user wrote it
      throw ConfigError("model.layers[" + std::to_string(i) + "] " +
                        layer_spec_text(spec.layers[i]) + ": " + e.what());
    }
  }
  return s.finish(static_cast<std::size_t>(spec.classes));
}

}  // namespace psrt::engine
