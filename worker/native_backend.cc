#include "worker/native_backend.h"

#include <algorithm>
#include <cstring>

#include "core/status.h"

namespace psrt {

engine::NetSpec net_spec(const ModelConfig& model) {
  engine::NetSpec spec;
  spec.arch = model.arch;
  spec.hidden = model.hidden;
  spec.dropout = float(model.dropout);
  return spec;
}

NativeBackend::NativeBackend(const Config& config, uint32_t rank)
    : config_(config), batch_(config.job.batch_size) {
  net_ = engine::build_network(net_spec(config.model), config.job.seed);
  train_ = data::load_fashion_mnist(config.data.path, true);
  if (config.data.train_limit > 0 && config.data.train_limit < train_.n) {
    train_.n = int(config.data.train_limit);
    train_.images.resize(std::size_t(train_.n) * train_.rows * train_.cols);
    train_.labels.resize(std::size_t(train_.n));
  }
  if (std::size_t(train_.rows) * train_.cols != net_->input_size()) {
    throw ConfigError("data: images of " + std::to_string(train_.rows) + "x" +
                      std::to_string(train_.cols) + " do not fit model input of " +
                      std::to_string(net_->input_size()) + " values");
  }
  sampler_ = std::make_unique<data::BatchSampler>(train_.n, int(rank), config.cluster.workers,
                                                  batch_, config.job.seed);
  images_.resize(std::size_t(batch_) * net_->input_size());
  labels_.resize(std::size_t(batch_));
}

void NativeBackend::begin_iteration(uint64_t iteration) {
  const std::vector<int> idx = sampler_->batch(iteration);
  const std::size_t sample = net_->input_size();
  for (std::size_t i = 0; i < idx.size(); ++i) {
    std::memcpy(images_.data() + i * sample, train_.images.data() + std::size_t(idx[i]) * sample,
                sample * sizeof(float));
    labels_[i] = train_.labels[std::size_t(idx[i])];
  }
  net_->set_batch(images_.data(), labels_.data(), int(idx.size()));
}

std::optional<double> NativeBackend::evaluate() {
  if (!test_) test_ = std::make_unique<data::Dataset>(data::load_fashion_mnist(config_.data.path, false));
  return net_->evaluate(test_->images.data(), test_->labels.data(), test_->n, 500);
}

}  // namespace psrt
