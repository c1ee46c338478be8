// Inverted dropout: in training each element is zeroed with probability p and the survivors are
// scaled by 1 / (1 - p); in evaluation (training == false) it is the identity. No tensors.
//
// Seeding: init_params(seed) sets the layer's seed (the Network passes mix_seed(net seed, layer)).
// Every training forward starts a new step: the mask of step t over a batch is
// dropout_keeps(dropout_step_seed(seed, t), sample * size + j) (dropout_mask.h). backward
// recomputes the mask of the last training forward, so nothing is stored and evaluate() in between
// changes nothing. Replicas built with the same seed draw the same masks step by step; reseed()
// gives a replica its own stream (workers do, through Network::reseed_randomness).
#pragma once

#include <cstdint>

#include "engine/layer.h"

namespace psrt::engine {

// The mask seed of training step `step` of a dropout layer seeded with `seed`: mix_seed(seed,
// step). One definition, so that the GPU network draws the CPU layer's masks.
uint64_t dropout_step_seed(uint64_t seed, uint64_t step);

class Dropout final : public Layer {
 public:
  // Throws psrt::ConfigError unless 0 <= p < 1.
  Dropout(std::string name, std::size_t size, float p);

  std::string_view kind() const override { return "dropout"; }
  std::size_t in_size() const override { return size_; }
  std::size_t out_size() const override { return size_; }
  double forward_flops() const override { return static_cast<double>(size_); }
  float p() const { return p_; }

  void init_params(uint64_t seed) override { reseed(seed); }
  void reseed_randomness(uint64_t seed) override { reseed(seed); }
  void skip_random_steps(uint64_t steps) override { set_next_step(steps); }
  // Restarts the mask stream: the next training forward is step 0 of `seed`.
  void reseed(uint64_t seed);
  // The next training forward uses step `step` (for tests and replays).
  void set_next_step(uint64_t step) { next_step_ = step; }
  // The step seed of the last training forward's mask.
  uint64_t step_seed() const { return step_seed_; }
  // The layer's seed and the step its next training forward will use (a GPU copy of the layer
  // continues the same stream from here).
  uint64_t seed() const { return seed_; }
  uint64_t next_step() const { return next_step_; }

  void forward(const float* in, float* out, int n, bool training) override;
  void backward(const float* in, const float* out, const float* dout, float* din, int n) override;

 private:
  std::size_t size_;
  float p_, scale_;
  uint32_t threshold_;
  uint64_t seed_ = 0, next_step_ = 0, step_seed_ = 0;
};

}  // namespace psrt::engine
