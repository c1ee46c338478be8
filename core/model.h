// The model description every module shares: tensors (what is pushed and stored) and layers (what
// is computed, in forward order). A tensor's priority is its forward-order index: key 0 is nearest
// the input and goes first.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace psrt {

// The most elements a tensor, a layer's activation (per sample) or a whole model may have: 2^40,
// 4 TiB of fp32. What a file or a peer claims is held to it, so that sizes in bytes and their
// sums never overflow.
constexpr uint64_t kMaxElements = 1ull << 40;

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
  // The layers whose outputs this one reads (indices into ModelDesc::layers). add_layer() fills in
  // the previous layer when this is empty, unless reads_input says the layer reads the model's
  // input (the data) instead: then `inputs` may stay empty or name further producers.
  std::vector<uint32_t> inputs = {};
  bool reads_input = false;
};

struct ModelDesc {
  std::string name;
  uint32_t batch_size = 0;   // the batch the layer times are for (0: not stated)
  double device_gflops = 0;  // the throughput the times were derived from (0: not stated)
  // The factor a profile's tensor sizes and times were multiplied by (its `scale`, or
  // model.scale): 1 for a full-size model. GradOptimizer scales its full-size baselines by it.
  double scale = 1;
  std::vector<TensorDesc> tensors;
  std::vector<LayerDesc> layers;

  uint64_t total_elements() const;
  uint64_t total_bytes() const { return total_elements() * sizeof(float); }
  double compute_ms() const;  // forward + backward of all layers
  // Appends a layer and its tensors, giving keys in forward order; an empty `inputs` becomes the
  // previous layer (none for the first layer, which reads the input). Returns the layer index.
  uint32_t add_layer(LayerDesc layer, const std::vector<std::pair<std::string, uint64_t>>& tensors);
};

// Sets every layer's times from its forward_flops as gen_profiles.py does: forward_ms = flops *
// batch / (gflops * 1e9) * 1e3, backward_ms = 2 * forward_ms; records batch and gflops in `model`.
// For models built by the native engine, which know their FLOPs but not their times.
void set_times_from_flops(ModelDesc& model, uint32_t batch, double gflops);

// The layers in an order where every layer comes after all its inputs (Kahn's algorithm, ties
// broken by index, so a chain keeps its own order). Throws ConfigError prefixed by `where` that
// names a layer with an input out of range or, for a cycle, a layer on it.
std::vector<uint32_t> topological_order(const ModelDesc& model, const std::string& where);

}  // namespace psrt
