#include "worker/stage_compute.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "core/profile.h"
#include "core/status.h"
#include "engine/net_spec.h"
#include "engine/stage_net.h"
#include "worker/emulated_device.h"
#include "worker/native_backend.h"

#if PSRT_WITH_CUDA
#include "worker/gpu_stage.h"
#endif

namespace psrt {

namespace {

// Floats per sample crossing the cut before layer `boundary`: the output of every earlier layer
// that a layer at or after it reads. In a chain that is the previous layer's output; a skip
// connection or a branch adds its producer's, relayed by the stages it passes.
std::size_t crossing_width(const ModelDesc& model, uint32_t boundary) {
  std::vector<bool> crosses(boundary, false);
  for (std::size_t l = boundary; l < model.layers.size(); ++l) {
    for (uint32_t in : model.layers[l].inputs) {
      if (in < boundary) crosses[in] = true;
    }
  }
  std::size_t width = 0;
  for (uint32_t l = 0; l < boundary; ++l) {
    if (crosses[l]) width += std::size_t(model.layers[l].activation_elements);
  }
  return std::max<std::size_t>(width, 1);
}

// engine::StageNet as a StageCompute.
class NativeStage final : public StageCompute {
 public:
  NativeStage(const Config& config, const StageLayout& layout, uint32_t stage)
      : net_(engine::net_spec(config), config.job.seed, layout.ranges.at(stage).first,
             layout.ranges.at(stage).second, layout.micro_batches) {}
  const ModelDesc& desc() const override { return net_.desc(); }
  uint32_t first() const override { return net_.first(); }
  uint32_t last() const override { return net_.last(); }
  std::size_t in_width() const override { return net_.in_width(); }
  std::size_t out_width() const override { return net_.out_width(); }
  int classes() const override { return net_.classes(); }
  void reseed_randomness(uint64_t seed) override { net_.reseed_randomness(seed); }
  void skip_random_steps(uint64_t steps) override { net_.skip_random_steps(steps); }
  std::span<float> param(uint32_t key) override { return net_.param(key); }
  std::span<const float> grad(uint32_t key) const override { return net_.grad(key); }
  std::span<float> input(uint32_t slot, int n) override { return net_.input(slot, n); }
  void set_labels(uint32_t slot, std::span<const int32_t> labels) override {
    net_.set_labels(slot, labels);
  }
  void forward_layer(uint32_t slot, uint32_t layer) override { net_.forward_layer(slot, layer); }
  std::span<const float> output(uint32_t slot) const override { return net_.output(slot); }
  std::optional<float> loss(uint32_t slot) const override { return net_.loss(slot); }
  std::span<float> output_grad(uint32_t slot) override { return net_.output_grad(slot); }
  void backward_layer(uint32_t slot, uint32_t layer, float scale, bool first_micro) override {
    net_.backward_layer(slot, layer, scale, first_micro);
  }
  std::span<const float> input_grad(uint32_t slot) const override { return net_.input_grad(slot); }
  void eval_forward(uint32_t slot) override { net_.eval_forward(slot); }
  int64_t eval_correct(uint32_t slot) const override { return net_.eval_correct(slot); }

 private:
  engine::StageNet net_;
};

// A profile's layers replayed (as the replay backend does): each micro-batch's forward and
// backward of a layer take the profile's time over the micro-batch count, spent waiting; the
// activations and their gradients have the real sizes (the profile's activation elements per
// sample of every output that crosses the cut, crossing_width), with zeros in them; the gradients
// are the replay backend's fixed values. A stage on a slower plan device waits longer
// (StageLayout::slowdown).
class ReplayStage final : public StageCompute {
 public:
  ReplayStage(const Config& config, const StageLayout& layout, uint32_t stage, uint32_t rank)
      : model_(stage_model(config)),
        first_(layout.ranges.at(stage).first),
        last_(layout.ranges.at(stage).second),
        micro_(layout.micro_batches),
        slowdown_(layout.slowdown.at(stage)),
        in_width_(first_ == 0 ? 1 : crossing_width(model_, first_)),
        out_width_(last_ == model_.layers.size()
                       ? std::size_t(model_.layers[last_ - 1].activation_elements)
                       : crossing_width(model_, last_)),
        slots_(layout.micro_batches) {
    for (const auto& t : model_.tensors) {
      if (t.layer < first_ || t.layer >= last_) continue;
      if (first_key_ < 0) first_key_ = t.key;
      params_.emplace_back(t.num_elements, 0.01f);
      auto& g = grads_.emplace_back(t.num_elements);
      for (uint64_t i = 0; i < t.num_elements; ++i) {
        g[i] = 1e-3f * float(int((i * 2654435761u + t.key * 97u + rank * 31u) % 17u) - 8);
      }
    }
  }
  const ModelDesc& desc() const override { return model_; }
  uint32_t first() const override { return first_; }
  uint32_t last() const override { return last_; }
  std::size_t in_width() const override { return in_width_; }
  std::size_t out_width() const override { return out_width_; }
  int classes() const override { return 1; }  // no labels: zeros travel with the activations
  void reseed_randomness(uint64_t) override {}
  void skip_random_steps(uint64_t) override {}
  std::span<float> param(uint32_t key) override { return params_.at(local(key)); }
  std::span<const float> grad(uint32_t key) const override { return grads_.at(local(key)); }
  std::span<float> input(uint32_t slot, int n) override {
    Slot& s = slots_.at(slot);
    s.in.assign(std::size_t(n) * in_width(), 0.0f);
    s.out.assign(std::size_t(n) * out_width(), 0.0f);
    return s.in;
  }
  void set_labels(uint32_t, std::span<const int32_t>) override {}
  void forward_layer(uint32_t, uint32_t layer) override {
    spend(model_.layers.at(layer).forward_ms);
  }
  std::span<const float> output(uint32_t slot) const override { return slots_.at(slot).out; }
  std::optional<float> loss(uint32_t) const override { return std::nullopt; }
  std::span<float> output_grad(uint32_t slot) override { return slots_.at(slot).out; }
  void backward_layer(uint32_t, uint32_t layer, float, bool) override {
    spend(model_.layers.at(layer).backward_ms);
  }
  std::span<const float> input_grad(uint32_t slot) const override { return slots_.at(slot).in; }
  // A profile has no data: StageLayout never schedules an evaluation on the replay backend.
  void eval_forward(uint32_t) override { no_data(); }
  int64_t eval_correct(uint32_t) const override { no_data(); }

 private:
  struct Slot {
    std::vector<float> in, out;
  };
  std::size_t local(uint32_t key) const {
    if (first_key_ < 0 || key < uint32_t(first_key_) ||
        key - uint32_t(first_key_) >= params_.size()) {
      throw std::out_of_range("ReplayStage: tensor " + std::to_string(key) +
                              " is not in this stage");
    }
    return key - uint32_t(first_key_);
  }
  [[noreturn]] static void no_data() {
    throw std::logic_error("the replay backend has no test set to evaluate");
  }
  void spend(double whole_batch_ms) { device_.spend(whole_batch_ms * slowdown_ / micro_); }

  ModelDesc model_;
  uint32_t first_, last_, micro_;
  double slowdown_;
  std::size_t in_width_, out_width_;  // floats per sample crossing into and out of the stage
  int64_t first_key_ = -1;
  std::vector<std::vector<float>> params_, grads_;
  std::vector<Slot> slots_;
  EmulatedDevice device_;
};

}  // namespace

ModelDesc stage_model(const Config& config) {
  if (config.model.backend == "replay")
    return load_profile(config.model.profile, config.model.scale);
  return engine::describe_network(engine::net_spec(config));
}

std::unique_ptr<StageCompute> make_stage_compute(const Config& config, const StageLayout& layout,
                                                 uint32_t stage, uint32_t rank) {
  if (config.model.backend == "replay") {
    return std::make_unique<ReplayStage>(config, layout, stage, rank);
  }
  if (config.model.backend == "gpu") {
#if PSRT_WITH_CUDA
    return make_gpu_stage(config, layout, stage, rank);
#else
    throw ConfigError(kBuiltWithoutCuda);
#endif
  }
  return std::make_unique<NativeStage>(config, layout, stage);
}

}  // namespace psrt
