// The native compute engine: a network of layers run one layer at a time, so that the worker's
// runtime can wait for a layer's parameters before its forward and push a layer's gradients the
// moment its backward returns.
//
// The loss is a layer: the last entry of desc().layers is "loss" (kind "softmax_xent", no tensors),
// whose input are the logits of the last Linear. Callers run forward_layer(0 .. L-1) and
// backward_layer(L-1 .. 0) over ALL layers, the loss layer included.
//
// Not thread-safe: one thread drives one Network. No globals: any number of Networks may coexist.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/layer_spec.h"
#include "core/model.h"

namespace psrt::engine {

class Layer;
class SoftmaxXent;

struct NetSpec {
  std::string arch = "mlp";              // "mlp", "lenet5", "vgg-small" or "custom"
  std::vector<int> hidden = {256, 128};  // mlp hidden widths (may be empty: softmax regression)
  int channels = 1, height = 28, width = 28, classes = 10;
  float dropout = 0.5f;  // vgg-small: dropout probability after fc1's ReLU; 0 leaves the layer out
  std::vector<LayerSpec> layers;  // custom: the network layer by layer (the loss follows)
};

class Network {
 public:
  // Takes layers in forward order; the last must be a SoftmaxXent, and each layer's in_size() must
  // equal the previous one's out_size(). Initialises parameters: layer i from mix_seed(seed, i).
  // Throws psrt::ConfigError otherwise.
  Network(std::string name, std::vector<std::unique_ptr<Layer>> layers, uint64_t seed);
  virtual ~Network();
  Network(const Network&) = delete;
  Network& operator=(const Network&) = delete;

  // Layers in forward order (ReLU and the loss are layers without tensors); tensors keyed in
  // forward order: fc1.weight, fc1.bias, fc2.weight, ...
  const ModelDesc& desc() const { return desc_; }
  std::size_t input_size() const;  // floats per sample that set_batch/evaluate read
  int classes() const;
  // Layer i in forward order (its kind and geometry; e.g. for building a GPU copy of the network).
  // Throws std::out_of_range on a bad index.
  const Layer& layer(std::size_t i) const { return *layers_.at(i); }

  // Restarts every layer's random stream (dropout masks): layer i from mix_seed(seed, i).
  // Parameters stay. Replicas of one job build from the same seed (same initial values) and then
  // reseed with their rank, so that they do not all drop the same units.
  void reseed_randomness(uint64_t seed);
  // Every layer's random stream as after `steps` training forwards (from a fresh reseed).
  void skip_random_steps(uint64_t steps);

  std::span<float> param(uint32_t key);              // throws std::out_of_range on a bad key
  std::span<const float> param(uint32_t key) const;  // the same, read-only
  std::span<const float> grad(uint32_t key) const;   // from the last backward

  // Copies n samples (n >= 1, any size) of input_size() floats and n labels in [0, classes).
  // Throws std::invalid_argument on n < 1 or a label out of range.
  void set_batch(const float* images, const int32_t* labels, int n);
  int batch_size() const { return n_; }

  void forward_layer(std::size_t i);  // callers go 0 .. L-1
  float loss() const;                 // mean softmax cross-entropy after the last forward
  // Callers go L-1 .. 0. When it returns, grad(k) of every tensor k of layer i is final and the
  // layer no longer reads its parameters (they may be overwritten right away).
  void backward_layer(std::size_t i);

  // Accuracy in [0, 1] over n samples, run in chunks of `batch` with separate buffers: the state of
  // the training batch (activations, loss, gradients) is left untouched. Returns 0 for n == 0.
  // `cancelled` (if any) is asked before each batch: EvaluationCancelled (engine/predictions.h).
  double evaluate(const float* images, const int32_t* labels, int n, int batch,
                  const std::function<bool()>& cancelled = {});

 private:
  void resize_buffers(std::vector<std::vector<float>>& bufs, int n) const;

  ModelDesc desc_;
  std::vector<std::unique_ptr<Layer>> layers_;
  SoftmaxXent* loss_layer_ = nullptr;
  std::vector<std::span<float>> values_;  // by tensor key
  std::vector<std::span<float>> grads_;   // by tensor key
  int n_ = 0;
  std::vector<int32_t> labels_;
  std::vector<std::vector<float>> acts_;   // acts_[0] input, acts_[i + 1] output of layer i
  std::vector<std::vector<float>> dacts_;  // gradients w.r.t. acts_
  std::vector<std::vector<float>> eval_acts_;
};

// Builds the network for `spec` with parameters seeded by `seed` (same seed, same parameters).
// mlp: fc1, relu1, fc2, relu2, ..., fcK (logits), loss.
// lenet5 (61,706 parameters at 1x28x28, 10 classes): conv1 6@5x5 pad 2, relu1, pool1, conv2
//   16@5x5, relu2, pool2, flatten, fc1 400-120, relu3, fc2 120-84, relu4, fc3 84-10, loss.
// vgg-small (870,634 parameters at 1x28x28, 10 classes): conv1 32, relu1, conv2 32, relu2, pool1,
//   conv3 64, relu3, conv4 64, relu4, pool2, flatten, fc1 3136-256, relu5, dropout1 (p =
//   spec.dropout, left out when 0), fc2 256-10, loss; every conv 3x3 pad 1.
// Pools are 2x2 stride 2. Weights feeding a ReLU (every conv, every hidden Linear) are Kaiming/He
// NORMAL (std sqrt(2 / fan_in)); the last Linear is Xavier UNIFORM; biases are zero.
// Throws psrt::ConfigError on a bad spec (unknown arch, non-positive sizes, classes < 2, an input
// too small for the arch's convs and pools, dropout outside [0, 1)).
std::unique_ptr<Network> build_network(const NetSpec& spec, uint64_t seed);
// The description build_network(spec, ...)->desc() has, without initialising any parameter.
ModelDesc describe_network(const NetSpec& spec);

}  // namespace psrt::engine
