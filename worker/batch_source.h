// The training and test data of one worker, shared by the native and gpu backends: the IDX pairs
// in data.path (Fashion-MNIST by default; images of data.image_rows x data.image_cols, labels
// below data.classes; the training set cut to data.train_limit), sharded by rank and reshuffled
// each epoch by data::BatchSampler, and the test set, read at start by the worker that evaluates.
// Both backends read the same batches for the same (config, rank, iteration), so their runs are
// comparable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/config.h"
#include "data/idx.h"
#include "data/sampler.h"
#include "engine/memory_estimate.h"

namespace psrt {

class BatchSource {
 public:
  // Chunk size of a test-set evaluation: bounds the activation memory, not the result.
  static constexpr int kEvalBatch = engine::kMostEvalBatch;

  // `input_size`: floats per sample the model reads. Throws ConfigError when the data cannot be
  // loaded, when its images do not hold input_size values, or when the shard is smaller than a
  // batch.
  BatchSource(const Config& config, uint32_t rank, std::size_t input_size);

  // Gathers iteration `iteration`'s batch into images() and labels(); returns its sample count.
  int load(uint64_t iteration);
  const float* images() const { return images_.data(); }
  const int32_t* labels() const { return labels_.data(); }

  int64_t iterations_per_epoch() const { return sampler_->iterations_per_epoch(); }
  // The worker that evaluates reads its test set at start, kept as bytes until test_set(), so
  // that a missing or bad test file stops the job before training rather than after it.
  void load_test_now();
  const data::Dataset& test_set();  // as floats, loaded or converted on the first call

 private:
  DataConfig data_;
  std::size_t sample_;
  data::Dataset train_;
  std::unique_ptr<data::Dataset> test_;
  std::unique_ptr<data::Dataset> test_bytes_;  // load_test_now()'s, until test_set()
  std::unique_ptr<data::BatchSampler> sampler_;
  std::vector<float> images_;
  std::vector<int32_t> labels_;
};

}  // namespace psrt
