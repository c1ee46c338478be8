// A layer's weight and bias tensors and their gradients, allocated on first use: describing a
// network (describe_network, each stage's view of the whole model, psrt-launch's check) reads
// only the shapes, and a pipeline stage holds the memory of its own layers, not the whole
// model's.
#pragma once

#include <cstddef>
#include <vector>

#include "engine/layer.h"

namespace psrt::engine {

class Weights {
 public:
  Weights(std::size_t weights, std::size_t biases) : weights_(weights), biases_(biases) {}

  std::vector<ParamShape> shapes() const { return {{"weight", weights_}, {"bias", biases_}}; }
  std::vector<ParamSlot> slots() {
    allocate();
    return {{"weight", w_, dw_}, {"bias", b_, db_}};
  }
  std::vector<float>& w() { return allocate(), w_; }
  std::vector<float>& b() { return allocate(), b_; }
  std::vector<float>& dw() { return allocate(), dw_; }
  std::vector<float>& db() { return allocate(), db_; }

 private:
  void allocate() {
    if (allocated_) return;
    w_.assign(weights_, 0.0f);
    b_.assign(biases_, 0.0f);
    dw_.assign(weights_, 0.0f);
    db_.assign(biases_, 0.0f);
    allocated_ = true;
  }

  std::size_t weights_, biases_;
  bool allocated_ = false;
  std::vector<float> w_, b_, dw_, db_;
};

}  // namespace psrt::engine
