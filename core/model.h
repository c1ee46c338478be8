// The model description every module shares: tensors (what is pushed and stored) and layers (what
// is computed, in forward order). A tensor's priority is its forward-order index: key 0 is nearest
// the input and goes first.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace psrt {

struct TensorDesc {
  uint32_t key = 0;           // index in ModelDesc::tensors, forward order
  std::string name;           // "fc1.weight"
  uint64_t num_elements = 0;  // fp32 elements
  uint32_t layer = 0;         // index in ModelDesc::layers
};

struct LayerDesc {
  std::string name;               // "fc1"
  std::string kind;               // "linear", "conv2d", "relu", ...
  std::vector<uint32_t> tensors;  // keys of this layer's parameter tensors
  double forward_ms = 0;          // per iteration at the profile's batch size
  double backward_ms = 0;
  double forward_flops = 0;        // per sample
  uint64_t activation_elements = 0;  // output elements per sample
};

struct ModelDesc {
  std::string name;
  std::vector<TensorDesc> tensors;
  std::vector<LayerDesc> layers;

  uint64_t total_elements() const;
  uint64_t total_bytes() const { return total_elements() * sizeof(float); }
  double compute_ms() const;  // forward + backward of all layers
  // Appends a layer and its tensors, giving keys in forward order. Returns the layer index.
  uint32_t add_layer(LayerDesc layer, const std::vector<std::pair<std::string, uint64_t>>& tensors);
};

}  // namespace psrt
