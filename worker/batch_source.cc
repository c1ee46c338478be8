#include "worker/batch_source.h"

#include <cstring>
#include <string>

#include "core/status.h"

namespace psrt {

namespace {

std::string channels_text(int channels) {
  return channels == 1 ? "1 channel (grey)" : std::to_string(channels) + " channels";
}

// The images must have the size the job declares (data.image_rows, data.image_cols,
// data.image_channels): the network was built for it.
void check_size(const data::Dataset& ds, const DataConfig& c, const char* split) {
  const std::string where = "data: the " + std::string(split) + " images in " + c.path;
  if (ds.n == 0) {  // a test set without images gave "test accuracy: 0.0000"
    throw ConfigError(where + ": there are none" +
                      (std::string(split) == "test"
                           ? " (set job.evaluate: false and job.eval_every: 0 to train without)"
                           : ""));
  }
  if (ds.rows != c.image_rows || ds.cols != c.image_cols) {
    throw ConfigError(where + " are " + std::to_string(ds.rows) + "x" + std::to_string(ds.cols) +
                      ", but data.image_rows x data.image_cols is " +
                      std::to_string(c.image_rows) + "x" + std::to_string(c.image_cols));
  }
  if (ds.channels != c.image_channels) {
    throw ConfigError(where + " have " + channels_text(ds.channels) +
                      ", but data.image_channels is " + std::to_string(c.image_channels));
  }
}

}  // namespace

BatchSource::BatchSource(const Config& config, uint32_t rank, std::size_t input_size)
    : data_(config.data), sample_(input_size) {
  // The training images stay bytes (a quarter of the memory); batches are converted as gathered.
  train_ = data::load_split(data_.path, true, data_.classes, data::PixelForm::kBytes);
  check_size(train_, data_, "training");
  if (config.data.train_limit < train_.n) train_.truncate(int(config.data.train_limit));
  if (train_.image_size() != sample_) {
    throw ConfigError("data: images of " + std::to_string(train_.rows) + "x" +
                      std::to_string(train_.cols) + " with " + channels_text(train_.channels) +
                      " do not fit model input of " + std::to_string(sample_) + " values");
  }
  const int batch = config.job.batch_size;
  const int workers = config.cluster.workers;
  if (train_.n / workers < batch) {
    // A split model's data is shared by its replicas (the first stages), not by every worker.
    const std::string readers =
        config.placement.split()
            ? " replicas (cluster.workers / placement.partitions) "
            : " workers (cluster.workers) ";
    throw ConfigError("data: " + std::to_string(train_.n) + " training images (data.path, " +
                      "data.train_limit) give each of " + std::to_string(workers) + readers +
                      std::to_string(train_.n / workers) +
                      ", fewer than one batch of job.batch_size " + std::to_string(batch));
  }
  sampler_ = std::make_unique<data::BatchSampler>(train_.n, int(rank), config.cluster.workers,
                                                  batch, config.job.seed);
  images_.resize(std::size_t(batch) * sample_);
  labels_.resize(std::size_t(batch));
}

int BatchSource::load(uint64_t iteration) {
  const std::vector<int> idx = sampler_->batch(iteration);
  for (std::size_t i = 0; i < idx.size(); ++i) {
    train_.copy_image(std::size_t(idx[i]), images_.data() + i * sample_);
    labels_[i] = train_.labels[std::size_t(idx[i])];
  }
  return int(idx.size());
}

void BatchSource::load_test_now() {
  if (test_ || test_bytes_) return;
  test_bytes_ = std::make_unique<data::Dataset>(
      data::load_split(data_.path, false, data_.classes, data::PixelForm::kBytes));
  check_size(*test_bytes_, data_, "test");
}

const data::Dataset& BatchSource::test_set() {
  if (test_) return *test_;
  if (!test_bytes_) {
    test_ = std::make_unique<data::Dataset>(data::load_split(data_.path, false, data_.classes));
    check_size(*test_, data_, "test");
    return *test_;
  }
  test_ = std::move(test_bytes_);
  test_->to_floats();  // the floats load_split would give
  return *test_;
}

}  // namespace psrt
