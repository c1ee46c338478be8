#include "worker/gpu_stage.h"

#include <stdexcept>
#include <string>
#include <vector>

#include "engine/cuda/device_buffer.h"
#include "engine/cuda/gpu_stage_net.h"
#include "engine/net_spec.h"
#include "engine/stage_net.h"
#include "worker/gpu_backend.h"
#include "worker/native_backend.h"

namespace psrt {
namespace {

using engine::cuda::GpuStageNet;
using engine::cuda::PinnedBuffer;

// The native stage's layers, built on the host from the same seed, then copied to the device.
std::unique_ptr<GpuStageNet> stage_on_device(const Config& config, const StageLayout& layout,
                                             uint32_t stage, uint32_t rank) {
  use_worker_device(config, rank);
  const engine::StageNet cpu(engine::net_spec(config), config.job.seed,
                             layout.ranges.at(stage).first, layout.ranges.at(stage).second,
                             layout.micro_batches);
  return std::make_unique<GpuStageNet>(cpu);
}

class GpuStage final : public StageCompute {
 public:
  GpuStage(const Config& config, const StageLayout& layout, uint32_t stage, uint32_t rank)
      : net_(stage_on_device(config, layout, stage, rank)) {
    for (const auto& t : net_->desc().tensors) {
      if (t.layer < net_->first() || t.layer >= net_->last()) continue;
      if (staging_.empty()) first_key_ = t.key;
      net_->download_param(t.key, staging_.emplace_back(t.num_elements).span());
      grad_host_.emplace_back(t.num_elements);
    }
  }

  const ModelDesc& desc() const override { return net_->desc(); }
  uint32_t first() const override { return net_->first(); }
  uint32_t last() const override { return net_->last(); }
  std::size_t in_width() const override { return net_->in_width(); }
  std::size_t out_width() const override { return net_->out_width(); }
  int classes() const override { return net_->classes(); }
  void reseed_randomness(uint64_t seed) override { net_->reseed_randomness(seed); }
  void skip_random_steps(uint64_t steps) override { net_->skip_random_steps(steps); }
  std::span<float> param(uint32_t key) override { return staging_.at(local(key)).span(); }
  // The runtime writes a tensor's next values only after this stage pushed its gradient, which
  // grad() downloaded after the upload queued here: the copy has run by then.
  void params_ready(uint32_t layer) override {
    for (uint32_t key : net_->desc().layers.at(layer).tensors) {
      net_->upload_param_async(key, staging_.at(local(key)).span());
    }
  }
  std::span<const float> grad(uint32_t key) const override {
    std::vector<float>& host = grad_host_.at(local(key));
    net_->download_grad(key, host);
    return host;
  }
  std::span<float> input(uint32_t slot, int n) override { return net_->input(slot, n); }
  void set_labels(uint32_t slot, std::span<const int32_t> labels) override {
    net_->set_labels(slot, labels);
  }
  void forward_layer(uint32_t slot, uint32_t layer) override { net_->forward_layer(slot, layer); }
  std::span<const float> output(uint32_t slot) const override { return net_->output(slot); }
  std::optional<float> loss(uint32_t slot) const override { return net_->loss(slot); }
  std::span<float> output_grad(uint32_t slot) override { return net_->output_grad(slot); }
  void backward_layer(uint32_t slot, uint32_t layer, float scale, bool first_micro) override {
    net_->backward_layer(slot, layer, scale, first_micro);
  }
  std::span<const float> input_grad(uint32_t slot) const override { return net_->input_grad(slot); }
  void eval_forward(uint32_t slot) override { net_->eval_forward(slot); }
  int64_t eval_correct(uint32_t slot) const override { return net_->eval_correct(slot); }

 private:
  std::size_t local(uint32_t key) const {
    if (key < first_key_ || key - first_key_ >= staging_.size()) {
      throw std::out_of_range("GpuStage: tensor " + std::to_string(key) + " is not in this stage");
    }
    return key - first_key_;
  }

  std::unique_ptr<GpuStageNet> net_;
  uint32_t first_key_ = 0;
  std::vector<PinnedBuffer> staging_;                  // by local key
  mutable std::vector<std::vector<float>> grad_host_;  // by local key, filled by grad()
};

}  // namespace

std::unique_ptr<StageCompute> make_gpu_stage(const Config& config, const StageLayout& layout,
                                             uint32_t stage, uint32_t rank) {
  return std::make_unique<GpuStage>(config, layout, stage, rank);
}

}  // namespace psrt
