// One pipeline stage (engine::StageNet) on one CUDA device, built from a CPU StageNet as
// GpuNetwork is built from a CPU Network: the same layers [first, last), the same parameter
// values and dropout streams, the same calls with the same meaning (stage_net.h). Only this
// stage's parameters, gradient sums and the slots' activations live in device memory; the layers
// run through GpuLayerStack, as GpuNetwork's do.
//
// The stage boundaries stay host spans, as StageNet's: input(slot, n) is a host buffer that
// forward_layer of the stage's first layer (and eval_forward) uploads; output(slot) and
// input_grad(slot) download; output_grad(slot) is a host buffer that backward_layer of the
// stage's last layer uploads. Gradients are summed over the micro-batches on the device (copy,
// then cuBLAS saxpy: each sum rounded once, as StageNet's loop); a dropout layer's backward
// applies the mask its forward of that micro-batch drew; the loss layer's input gradient is
// scaled by loss_scale (cuBLAS sscal).
//
// Work is queued on the default stream; every download waits for the work before it. Plain C++:
// no CUDA headers. CUDA and cuBLAS failures throw std::runtime_error naming the call. Not
// thread-safe: one thread drives one GpuStageNet.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "core/model.h"

namespace psrt::engine {
class StageNet;
}

namespace psrt::engine::cuda {

class GpuStageNet {
 public:
  // Copies `cpu`'s layers, current parameters, dropout streams and slot count to the current
  // device; `cpu` is not used afterwards. Throws std::runtime_error when there is no device,
  // std::invalid_argument for a layer kind without a GPU version.
  explicit GpuStageNet(const StageNet& cpu);
  ~GpuStageNet();
  GpuStageNet(const GpuStageNet&) = delete;
  GpuStageNet& operator=(const GpuStageNet&) = delete;

  const ModelDesc& desc() const { return desc_; }  // the whole network's
  uint32_t first() const { return first_; }
  uint32_t last() const { return last_; }
  bool holds_loss() const { return last_ == desc_.layers.size(); }
  std::size_t in_width() const;
  std::size_t out_width() const;
  int classes() const { return classes_; }

  void reseed_randomness(uint64_t seed);
  void skip_random_steps(uint64_t steps);

  // As StageNet's (see above for where the host buffers meet the device).
  std::span<float> input(uint32_t slot, int n);
  void set_labels(uint32_t slot, std::span<const int32_t> labels);
  void forward_layer(uint32_t slot, uint32_t layer);
  std::span<const float> output(uint32_t slot) const;
  float loss(uint32_t slot) const;
  std::span<float> output_grad(uint32_t slot);
  void backward_layer(uint32_t slot, uint32_t layer, float loss_scale, bool first_micro);
  std::span<const float> input_grad(uint32_t slot) const;
  void eval_forward(uint32_t slot);
  int64_t eval_correct(uint32_t slot) const;

  // This stage's tensors only (std::out_of_range for another key); host spans of exactly the
  // tensor's element count (std::invalid_argument otherwise). The gradient is the sum over the
  // micro-batches. Downloads wait for the queued work; upload_param_async does not wait (`host`,
  // best pinned, must stay unchanged until work queued after it is known to be done).
  void upload_param(uint32_t key, std::span<const float> host);
  void upload_param_async(uint32_t key, std::span<const float> host);
  void download_param(uint32_t key, std::span<float> host) const;
  void download_grad(uint32_t key, std::span<float> host) const;
  const float* device_grad(uint32_t key) const;

  void synchronize() const;

 private:
  struct Device;  // the CUDA side: context, layers, gradient sums, slots (gpu_stage_net.cc)
  struct Slot;
  Slot& slot_at(uint32_t slot) const;
  // The slot for a layer's forward or backward: std::logic_error before input(),
  // std::out_of_range for a layer outside [first, last).
  Slot& slot_for(const char* what, uint32_t slot, uint32_t layer) const;
  std::size_t local_key(uint32_t key) const;
  // The loss layer (the last stage's last): forward and its input gradient, scaled.
  void loss_forward(Slot& s);
  void loss_backward(Slot& s, float* din, float loss_scale);
  void sum_grads(uint32_t layer, bool first_micro);

  ModelDesc desc_;
  uint32_t first_, last_;
  int classes_ = 0;
  uint32_t first_key_ = 0;
  std::unique_ptr<Device> dev_;
};

}  // namespace psrt::engine::cuda
