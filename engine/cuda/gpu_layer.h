// Internal to GpuNetwork: one engine layer on the GPU, the counterpart of a CPU Layer (layer.h)
// with the same layouts and semantics, built from that CPU layer by make_gpu_layer. Like the CPU
// layer it owns its parameters and gradients (device memory) and no activations. Plain C++ (no
// CUDA headers): the kernels are behind gpu_layers.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/cuda/device_buffer.h"

namespace psrt::engine {
class Layer;
}

namespace psrt::engine::cuda {

// One parameter tensor on the device: its values and its gradient, of the same size.
struct GpuParam {
  DeviceBuffer* value;
  DeviceBuffer* grad;
};

class GpuLayer {
 public:
  virtual ~GpuLayer() = default;
  GpuLayer() = default;
  GpuLayer(const GpuLayer&) = delete;
  GpuLayer& operator=(const GpuLayer&) = delete;

  // The parameter tensors in the CPU layer's params() order (weight, bias); empty when none.
  virtual std::vector<GpuParam> params() { return {}; }
  // Floats of scratch memory forward and backward need for n samples. The network gives every
  // layer the same workspace: a layer keeps nothing in it from forward to backward.
  virtual std::size_t workspace(int /*n*/) const { return 0; }

  // As Layer::forward / Layer::backward over device pointers, on the default stream (they return
  // before the GPU is done). din == nullptr: nobody needs the input gradient.
  virtual void forward(GpuContext& ctx, const float* in, float* out, int n, bool training,
                       float* workspace) = 0;
  virtual void backward(GpuContext& ctx, const float* in, const float* out, const float* dout,
                        float* din, int n, float* workspace) = 0;

  // Layers with a bias (linear, conv2d) can run the ReLU that follows them in the same pass as
  // the bias: relu_out = max(in W + b, 0), `pre` a scratch of out_size floats per sample (left
  // without the bias). The ReLU's own forward is then skipped; its backward (which reads only its
  // output) is unchanged.
  virtual bool fuses_relu() const { return false; }

  // Dropout's mask stream, as the CPU layer's (Layer::reseed_randomness, skip_random_steps), and
  // the step seed of the mask that backward applies: the last training forward's, or one set
  // back (a pipeline stage's backward of an earlier micro-batch). Other layers ignore them.
  virtual void reseed_randomness(uint64_t /*seed*/) {}
  virtual void skip_random_steps(uint64_t /*steps*/) {}
  virtual uint64_t mask_seed() const { return 0; }
  virtual void set_mask_seed(uint64_t /*step_seed*/) {}
  virtual void forward_relu(GpuContext& /*ctx*/, const float* /*in*/, float* /*pre*/,
                            float* /*relu_out*/, int /*n*/, float* /*workspace*/) {}
};

// The GPU version of `cpu` (linear, conv2d, relu, maxpool2d, flatten, dropout), its parameters
// allocated (not yet copied) and its gradients zero. A dropout layer continues the CPU layer's
// mask stream from the CPU layer's next step. Throws std::invalid_argument for any other kind
// (softmax_xent is the network's own business).
std::unique_ptr<GpuLayer> make_gpu_layer(const Layer& cpu);

}  // namespace psrt::engine::cuda
