// One stage of a pipelined network (model parallelism): layers [first, last) of an architecture,
// run micro-batch by micro-batch. Parameters start as build_network(spec, seed) would give them
// (layer i from mix_seed(seed, i)) and keep the whole network's keys; the other layers are built,
// described and dropped, never initialised or kept. Each micro-batch in flight has its own
// activation buffers (a `slot`); parameter gradients are summed over the micro-batches of an
// iteration, so with one micro-batch they are exactly a Network's.
//
// Not thread-safe: one thread drives one StageNet.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/model.h"
#include "engine/network.h"

namespace psrt::engine {

class StageNet {
 public:
  // Throws psrt::ConfigError on a bad spec or range (first < last <= layers, slots >= 1).
  StageNet(const NetSpec& spec, uint64_t seed, uint32_t first, uint32_t last, uint32_t slots);
  ~StageNet();
  StageNet(const StageNet&) = delete;
  StageNet& operator=(const StageNet&) = delete;

  const ModelDesc& desc() const { return desc_; }  // the whole network's
  uint32_t first() const { return first_; }
  uint32_t last() const { return last_; }
  bool holds_loss() const { return last_ == desc_.layers.size(); }
  std::size_t in_width() const;   // floats per sample entering the stage
  std::size_t out_width() const;  // floats per sample leaving it
  int classes() const { return classes_; }
  uint32_t slots() const;
  // Layer `layer` (global index in [first, last); std::out_of_range otherwise), read-only: what
  // a GPU copy of the stage is built from.
  const Layer& layer(uint32_t layer) const;

  // As Network's, with the layers' global indices.
  void reseed_randomness(uint64_t seed);
  void skip_random_steps(uint64_t steps);

  // This stage's tensors only (std::out_of_range for another key).
  std::span<float> param(uint32_t key);
  std::span<const float> param(uint32_t key) const;
  // Summed over the micro-batches since the last backward with first_micro.
  std::span<const float> grad(uint32_t key) const;

  // Slot `slot` takes a micro-batch of n samples: the buffer to fill with its input.
  std::span<float> input(uint32_t slot, int n);
  // The last stage: the micro-batch's labels (copied; checked in [0, classes)).
  void set_labels(uint32_t slot, std::span<const int32_t> labels);
  void forward_layer(uint32_t slot, uint32_t layer);  // global index in [first, last)
  std::span<const float> output(uint32_t slot) const;
  float loss(uint32_t slot) const;  // the last stage, after the loss layer's forward
  // Not the last stage: where the gradient w.r.t. output() goes before the backward.
  std::span<float> output_grad(uint32_t slot);
  // Global index in [first, last), going down. The loss layer's gradient is multiplied by
  // `loss_scale` (the micro-batch's share of the batch, so that the sum is the batch mean);
  // `first_micro`: the parameter gradients start from this micro-batch's (else are added to).
  void backward_layer(uint32_t slot, uint32_t layer, float loss_scale, bool first_micro);
  std::span<const float> input_grad(uint32_t slot) const;  // not the first stage

  // Evaluation (test accuracy): the slot's input through every layer of the stage in evaluation
  // mode (dropout is the identity and draws nothing), stopping before the loss layer; output()
  // is what goes to the next stage. The training state (random streams, gradient sums)
  // is untouched; the slot's activations are overwritten.
  void eval_forward(uint32_t slot);
  // The last stage, after eval_forward and set_labels: samples whose largest logit is their label.
  int64_t eval_correct(uint32_t slot) const;

 private:
  struct Slot;
  Layer& at(uint32_t layer) { return *layers_.at(layer - first_); }
  std::size_t local_key(uint32_t key) const;

  ModelDesc desc_;
  uint32_t first_, last_;
  int classes_ = 0;
  std::vector<std::unique_ptr<Layer>> layers_;
  std::vector<std::span<float>> values_, grads_;  // by local key
  std::vector<std::vector<float>> sums_;          // by local key
  uint32_t first_key_ = 0;
  std::vector<Slot> slots_;
};

}  // namespace psrt::engine
