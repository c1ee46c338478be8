// The engine's network on one CUDA device, built from a CPU engine::Network: the same desc(), the
// same layers in the same order, starting from the CPU network's current parameter values (and,
// for dropout, its mask stream), so that both compute the same thing step by step. Every parameter,
// gradient and activation stays in device memory; the host sees the batch going in, the loss, the
// accuracy, and whatever it copies out on purpose.
//
// The calls mirror engine::Network (network.h): set_batch, then forward_layer(0 .. L-1) and
// backward_layer(L-1 .. 0) over ALL layers, the loss layer last; evaluate() on its own buffers.
// Work is queued on one stream, the default one: forward_layer and backward_layer return before
// the GPU has finished (except the loss layer's forward, which returns the loss); every copy to
// the host, and synchronize(), waits for the work queued before it; a reader on another stream
// orders itself after an event recorded on the default stream (as the device LACO encoder does).
// A ReLU after a linear or conv layer runs fused with that layer's bias (one pass): its
// forward_layer call then has nothing left to do, and the buffer before it is scratch.
//
// Plain C++: no CUDA headers (the device state is kept behind a pointer). CUDA and cuBLAS failures
// throw std::runtime_error naming the call. Not thread-safe: one thread drives one GpuNetwork.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "core/model.h"
#include "engine/cuda/device_buffer.h"

namespace psrt::engine {
class Network;
}

namespace psrt::engine::cuda {

class GpuNetwork {
 public:
  // Copies `cpu`'s structure and current parameters to the current device; `cpu` is not used
  // afterwards. Throws std::runtime_error when there is no device (GpuContext) or a CUDA call
  // fails, std::invalid_argument for a layer kind without a GPU version.
  explicit GpuNetwork(const Network& cpu);
  ~GpuNetwork();
  GpuNetwork(const GpuNetwork&) = delete;
  GpuNetwork& operator=(const GpuNetwork&) = delete;

  const ModelDesc& desc() const { return desc_; }
  std::size_t input_size() const { return widths_.front(); }
  int classes() const { return static_cast<int>(widths_.back()); }

  // As Network::set_batch: n >= 1 host samples of input_size() floats and n host labels in
  // [0, classes), uploaded. Throws std::invalid_argument on n < 1 or a label out of range.
  void set_batch(const float* images, const int32_t* labels, int n);
  int batch_size() const { return n_; }

  void forward_layer(std::size_t i);    // callers go 0 .. L-1
  float loss() const { return loss_; }  // mean cross-entropy of the last forward of the loss layer
  // Callers go L-1 .. 0. Layer 0's input gradient is not computed (nobody needs it). When the
  // queued work is done, device_grad(k) of layer i's tensors is final.
  void backward_layer(std::size_t i);

  // As Network::evaluate: accuracy in [0, 1] of n host samples, in chunks of `batch`, on separate
  // buffers; the training state (activations, gradients, loss, dropout step) is left untouched.
  double evaluate(const float* images, const int32_t* labels, int n, int batch,
                  const std::function<bool()>& cancelled = {});

  // Device memory of tensor `key` (desc().tensors[key].num_elements floats). The pointers stay
  // valid for the network's lifetime; a gradient holds the last backward's values.
  // Throw std::out_of_range on a bad key.
  const float* device_param(uint32_t key) const;
  const float* device_grad(uint32_t key) const;
  // Copies between the host and tensor `key`; `host` must hold exactly num_elements floats
  // (std::invalid_argument otherwise). The download waits for the queued work.
  void upload_param(uint32_t key, std::span<const float> host);
  // upload_param queued on the stream without a wait: `host` (best pinned) must stay unchanged
  // until the stream has run the copy, i.e. until work queued after it is known to be done.
  void upload_param_async(uint32_t key, std::span<const float> host);
  void download_param(uint32_t key, std::span<float> host) const;
  void download_grad(uint32_t key, std::span<float> host) const;

  // Waits until all queued work is done.
  void synchronize() const;

 private:
  struct Device;  // the CUDA side: context, layers, tensors, activation buffers (gpu_network.cc)

  void reserve(int n, bool training);

  ModelDesc desc_;
  std::vector<std::size_t> widths_;  // widths_[0] input, widths_[i + 1] output of layer i
  int n_ = 0;
  float loss_ = 0.0f;
  std::unique_ptr<Device> dev_;
};

}  // namespace psrt::engine::cuda
