// Model parallelism (placement.mode model | hybrid): a worker that runs one stage of a replica.
// It builds only its stage's layers (StageCompute: the native engine's, on the host or a CUDA
// device, or a replayed profile's);
// the first stage reads the replica's
// batches (sharded over the replicas as data parallelism shards over the workers), the last
// holds the loss. Each iteration is GPipe's fill and drain: the forwards of micro-batches
// 0 .. M-1, activations passed on as each ends, then the backwards of M-1 .. 0, activation
// gradients passed back. A layer's forward of micro-batch 0 waits for its parameters; its
// gradients, summed over the micro-batches, go to the push scheduler the moment micro-batch 0's
// backward of it ends, with priority from the layer's global position (its tensor keys).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/config.h"
#include "core/stage_layout.h"
#include "core/timeline.h"
#include "worker/batch_source.h"
#include "worker/ps_client.h"
#include "worker/stage_compute.h"
#include "worker/trainer.h"

namespace psrt {

class StageWorker {
 public:
  // Throws ConfigError for a plan or layout that does not fit the model.
  StageWorker(const Config& config, uint32_t rank);

  const ModelDesc& desc() const { return net_->desc(); }
  const StageRole& role() const { return role_; }
  std::span<float> param(uint32_t key) { return net_->param(key); }
  bool holds_loss() const { return net_->holds_loss(); }

  // Trains; with job.evaluate replica 0's stages then pass the test set through the pipeline
  // (and every job.eval_every iterations), the last stage's result in test_accuracy.
  TrainResult train(PsClient& client, Timeline* timeline);
  // This stage's tensors in key order, raw fp32 (the stages' files, concatenated in stage
  // order, are the whole model's dump).
  void dump_params(const std::string& path);

 private:
  // Micro-batch `mb` of iteration `t` through this stage's layers.
  void forward(PsClient& client, Timeline* tl, uint64_t t, uint32_t mb);
  void backward(PsClient& client, Timeline* tl, uint64_t t, uint32_t mb);
  // The test-set pass after `done` iterations when one is due (StageLayout::evaluates_after,
  // replica 0): the first stage reads the test set and sends it on batch by batch, the others pass
  // it on, the last counts the correct answers and returns the accuracy (the others: none).
  std::optional<double> evaluate(PsClient& client, Timeline* tl, uint64_t done);
  // One batch of that pass through this stage: sent on, or counted into `correct` (last stage).
  void eval_batch(PsClient& client, uint64_t done, uint32_t batch, uint32_t batches,
                  std::span<const float> in, std::shared_ptr<std::vector<int32_t>> labels,
                  int64_t& correct);

  Config config_;
  uint32_t rank_;
  bool waits_for_all_;  // bigdl: the forward waits for every parameter (SchedulePolicy)
  StageRole role_;
  std::unique_ptr<StageCompute> net_;
  std::unique_ptr<BatchSource> source_;                        // the first stage only
  std::vector<std::shared_ptr<std::vector<int32_t>>> labels_;  // by micro-batch
  double iter_loss_ = 0;  // the last stage: this iteration's batch mean
  double loss_sum_ = 0;   // summed over the iterations since the last log line
  int loss_count_ = 0;
};

}  // namespace psrt
