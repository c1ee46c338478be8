// Internal to the engine: one builder per architecture, called by build_network() after the common
// spec checks. Each returns the layers in forward order with the loss last.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/network.h"

namespace psrt::engine {

struct ArchLayers {
  std::string name;
  std::vector<std::unique_ptr<Layer>> layers;
};

// Checks the spec and returns its architecture's layers (what build_network() builds a Network of).
ArchLayers arch_layers(const NetSpec& spec);
// Appends `layer` and its tensors to `desc` as the Network describes it.
void describe_layer(Layer& layer, ModelDesc& desc);

ArchLayers mlp_layers(const NetSpec& spec);
ArchLayers lenet5_layers(const NetSpec& spec);
ArchLayers vgg_small_layers(const NetSpec& spec);
ArchLayers custom_layers(const NetSpec& spec);

}  // namespace psrt::engine
