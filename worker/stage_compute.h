// What a pipeline stage computes, behind one interface for the stage trainer: the native engine's
// layers (engine::StageNet), the same on a CUDA device (GpuStage, gpu_stage.h) or a replayed
// profile (ReplayStage: each layer's profile time spent waiting, activations and gradients of the
// real sizes). Layers are global indices in [first, last); micro-batches in flight each have a
// slot.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>

#include "core/config.h"
#include "core/model.h"
#include "core/stage_layout.h"

namespace psrt {

class StageCompute {
 public:
  virtual ~StageCompute() = default;
  virtual const ModelDesc& desc() const = 0;  // the whole model's
  virtual uint32_t first() const = 0;
  virtual uint32_t last() const = 0;
  bool holds_loss() const { return last() == desc().layers.size(); }
  virtual std::size_t in_width() const = 0;   // floats per sample entering the stage
  virtual std::size_t out_width() const = 0;  // floats per sample leaving it
  virtual int classes() const = 0;            // labels lie in [0, classes)

  virtual void reseed_randomness(uint64_t seed) = 0;
  virtual void skip_random_steps(uint64_t steps) = 0;
  // The host values of a tensor: where the runtime writes what the servers send.
  virtual std::span<float> param(uint32_t key) = 0;
  // The values in param() of `layer`'s tensors are the ones to compute with: called after the
  // runtime's wait for them and before the layer's next forward (a device stage uploads them
  // here); the host backends compute on param() itself.
  virtual void params_ready(uint32_t /*layer*/) {}
  // Summed over micro-batches. The same storage on every call, written only by the backward of
  // key's layer or by grad() itself: the trainer sends from it without a copy (PsClient::lend).
  virtual std::span<const float> grad(uint32_t key) const = 0;

  virtual std::span<float> input(uint32_t slot, int n) = 0;
  virtual void set_labels(uint32_t slot, std::span<const int32_t> labels) = 0;
  virtual void forward_layer(uint32_t slot, uint32_t layer) = 0;
  virtual std::span<const float> output(uint32_t slot) const = 0;
  virtual std::optional<float> loss(uint32_t slot) const = 0;  // none without a real loss
  virtual std::span<float> output_grad(uint32_t slot) = 0;
  virtual void backward_layer(uint32_t slot, uint32_t layer, float loss_scale,
                              bool first_micro) = 0;
  virtual std::span<const float> input_grad(uint32_t slot) const = 0;

  // Test-set evaluation between iterations (engine::StageNet::eval_forward): the slot's input
  // through the stage in evaluation mode, up to the logits on the last stage, which then counts
  // the samples whose largest logit is their label (after set_labels).
  virtual void eval_forward(uint32_t slot) = 0;
  virtual int64_t eval_correct(uint32_t slot) const = 0;
};

// The whole model's description for the config's backend (native, gpu: the engine's network;
// replay: the profile), without building anything.
ModelDesc stage_model(const Config& config);
// Stage `stage` of `layout` on the config's backend. Throws ConfigError.
std::unique_ptr<StageCompute> make_stage_compute(const Config& config, const StageLayout& layout,
                                                 uint32_t stage, uint32_t rank);

}  // namespace psrt
