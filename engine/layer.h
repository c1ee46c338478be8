// The engine's internal layer interface. A layer maps a batch of n samples of in_size() floats to n
// samples of out_size() floats; it owns its parameters and their gradients and keeps no activation
// buffers of its own (the Network owns those), so one layer object can serve training and
// evaluation. New layers (conv2d, pooling, dropout, ...) implement this interface in their own
// file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace psrt::engine {

// One parameter tensor of a layer: its name suffix ("weight", "bias"), its values and its gradient.
struct ParamSlot {
  std::string suffix;
  std::span<float> value;
  std::span<float> grad;
};

// A parameter tensor's name suffix and size, known before (and without) its memory.
struct ParamShape {
  std::string suffix;
  std::size_t size = 0;
};

class Layer {
 public:
  virtual ~Layer() = default;
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  const std::string& name() const { return name_; }
  virtual std::string_view kind() const = 0;
  virtual std::size_t in_size() const = 0;   // input elements per sample
  virtual std::size_t out_size() const = 0;  // output elements per sample
  virtual double forward_flops() const = 0;  // per sample

  // The layer's parameter tensors in key order; empty for layers without parameters. Layers
  // allocate their parameters here (or at init_params, forward, backward) the first time, so
  // that a network can be described from param_shapes() without holding them.
  virtual std::vector<ParamSlot> params() { return {}; }
  virtual std::vector<ParamShape> param_shapes() const { return {}; }
  // Seeded initialisation of the parameters; the same seed gives the same values.
  virtual void init_params(uint64_t /*seed*/) {}
  // Restarts the layer's own random stream (dropout's masks) from `seed`, leaving its parameters
  // as they are; layers without randomness ignore it.
  virtual void reseed_randomness(uint64_t /*seed*/) {}
  // Moves the random stream to where `steps` training forwards would have left it (a resumed
  // job continues the masks of an uninterrupted one).
  virtual void skip_random_steps(uint64_t /*steps*/) {}

  // in: n x in_size(), out: n x out_size(). `training` is false in evaluation (dropout etc.).
  virtual void forward(const float* in, float* out, int n, bool training) = 0;
  // in/out: what forward saw and produced; dout: the loss gradient w.r.t. out (n x out_size());
  // din: where the gradient w.r.t. in goes (n x in_size()), or nullptr when nobody needs it.
  // Writes (never accumulates) the parameter gradients. When it returns, the layer no longer reads
  // its parameters until the next forward.
  virtual void backward(const float* in, const float* out, const float* dout, float* din,
                        int n) = 0;

 protected:
  explicit Layer(std::string name) : name_(std::move(name)) {}

 private:
  std::string name_;
};

}  // namespace psrt::engine
