#include "worker/stage_trainer.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cmath>
#include <cstring>

#include "core/status.h"
#include "engine/init.h"
#include "scheduler/schedule_policy.h"
#include "worker/run_clock.h"
#include "worker/traced.h"
#include "worker/trainer.h"

namespace psrt {

namespace {

// The config each replica's data shard is cut by: data parallelism over the replicas.
Config replica_config(const Config& config, uint32_t replicas) {
  Config c = config;
  c.cluster.workers = int(replicas);
  return c;
}

}  // namespace

StageWorker::StageWorker(const Config& config, uint32_t rank)
    : config_(config),
      rank_(rank),
      waits_for_all_(SchedulePolicy(config.scheduler.mode).forward_waits_for_all()) {
  // The whole model's description, to cut it into stages.
  const ModelDesc whole = stage_model(config);
  role_.layout = stage_layout(config, whole);
  const StageLayout& l = role_.layout;
  if (rank >= l.stages * l.replicas) {
    throw ConfigError("worker rank " + std::to_string(rank) + " is outside cluster.workers");
  }
  role_.stage = l.stage_of(rank);
  role_.replica = l.replica_of(rank);
  const auto [first, last] = l.ranges[role_.stage];
  net_ = make_stage_compute(config, l, role_.stage, rank);
  // Dropout masks: replica r draws what data-parallel worker r would.
  net_->reseed_randomness(engine::mix_seed(config.job.seed, 0xd50b0000u + role_.replica));
  role_.keys = l.keys(role_.stage, net_->desc());
  role_.in_width = net_->in_width();
  role_.out_width = net_->out_width();
  role_.classes = net_->classes();
  if (role_.stage == 0 && config.model.backend != "replay") {  // native, gpu
    source_ = std::make_unique<BatchSource>(replica_config(config, l.replicas), role_.replica,
                                            net_->in_width());
    // Replica 0's first stage feeds the test-set passes: a test file missing on its host stops
    // the job before training, not at the first pass.
    if (role_.replica == 0 && (l.eval_at_end || l.eval_every > 0)) source_->load_test_now();
  }
  labels_.resize(l.micro_batches);
  spdlog::info(
      "worker {}: stage {} of {} (replica {}), layers {} .. {} ({} tensors), {} "
      "micro-batches",
      rank, role_.stage, l.stages, role_.replica, desc().layers[first].name,
      desc().layers[last - 1].name, role_.keys.size(), l.micro_batches);
}

void StageWorker::forward(PsClient& client, Timeline* tl, uint64_t t, uint32_t mb) {
  const StageLayout& l = role_.layout;
  const uint32_t rows = l.micro_rows(mb);
  std::span<float> in = net_->input(mb, int(rows));
  if (source_) {
    const std::size_t first = l.micro_first(mb);
    std::memcpy(in.data(), source_->images() + first * role_.in_width, in.size_bytes());
    labels_[mb] = std::make_shared<std::vector<int32_t>>(source_->labels() + first,
                                                         source_->labels() + first + rows);
  } else if (role_.stage == 0) {  // replay: no data, zero labels
    labels_[mb] = std::make_shared<std::vector<int32_t>>(rows, 0);
  } else {
    StageMessage m;
    traced(tl, "wait", "wait activations mb " + std::to_string(mb),
           [&] { m = client.wait_stage(PsClient::StageDir::kForward, t, mb); });
    std::memcpy(in.data(), m.values.data(), in.size_bytes());
    labels_[mb] = std::make_shared<std::vector<int32_t>>(rows);
    std::memcpy(labels_[mb]->data(), m.labels.data(), rows * sizeof(int32_t));
  }
  if (net_->holds_loss()) net_->set_labels(mb, *labels_[mb]);
  for (uint32_t layer = net_->first(); layer < net_->last(); ++layer) {
    const LayerDesc& ld = desc().layers[layer];
    if (mb == 0 && !ld.tensors.empty()) {
      if (!waits_for_all_) {
        traced(tl, "wait", "wait " + ld.name, [&] { client.wait_layer(layer, t); });
      }
      net_->params_ready(layer);  // a device stage uploads the layer's new values here
    }
    traced(tl, "forward", "fwd " + ld.name + " mb " + std::to_string(mb),
           [&] { net_->forward_layer(mb, layer); });
  }
  if (net_->holds_loss()) {
    const float loss = net_->loss(mb).value_or(0.0f);
    if (!std::isfinite(loss)) {
      throw JobError("loss is " + std::to_string(loss) + " at iteration " + std::to_string(t) +
                     ": training diverged (lower optimizer.lr?)");
    }
    iter_loss_ += double(loss) * rows / l.batch;
    return;
  }
  const auto out = net_->output(mb);
  client.send_stage(PsClient::StageDir::kForward, t, mb, rows,
                    std::make_shared<const std::vector<float>>(out.begin(), out.end()),
                    labels_[mb]);
}

void StageWorker::backward(PsClient& client, Timeline* tl, uint64_t t, uint32_t mb) {
  const StageLayout& l = role_.layout;
  const uint32_t rows = l.micro_rows(mb);
  if (!net_->holds_loss()) {
    StageMessage m;
    traced(tl, "wait", "wait gradients mb " + std::to_string(mb),
           [&] { m = client.wait_stage(PsClient::StageDir::kBackward, t, mb); });
    std::span<float> dout = net_->output_grad(mb);
    std::memcpy(dout.data(), m.values.data(), dout.size_bytes());
  }
  // The micro-batch's share of the batch mean: exactly 1 with one micro-batch.
  const float scale = l.micro_batches == 1 ? 1.0f : float(rows) / float(l.batch);
  const bool first_micro = mb + 1 == l.micro_batches;
  for (uint32_t layer = net_->last(); layer-- > net_->first();) {
    const LayerDesc& ld = desc().layers[layer];
    // The first micro-batch's backward overwrites the gradients lent for the last iteration:
    // reclaimed first (never a wait in synchronous training: worker/lent_buffers.h).
    if (first_micro) client.reclaim(ld.tensors);
    traced(tl, "backward", "bwd " + ld.name + " mb " + std::to_string(mb),
           [&] { net_->backward_layer(mb, layer, scale, first_micro); });
    if (mb == 0) {
      // Sent from where they are (per-tensor buffers on the CPU and the GPU stage alike).
      for (uint32_t key : ld.tensors) client.lend(key, t, net_->grad(key));
    }
  }
  if (role_.stage > 0) {
    const auto din = net_->input_grad(mb);
    client.send_stage(PsClient::StageDir::kBackward, t, mb, rows,
                      std::make_shared<const std::vector<float>>(din.begin(), din.end()));
  }
}

void StageWorker::eval_batch(PsClient& client, uint64_t done, uint32_t batch, uint32_t batches,
                             std::span<const float> in,
                             std::shared_ptr<std::vector<int32_t>> labels, int64_t& correct) {
  const auto rows = uint32_t(labels->size());
  std::span<float> x = net_->input(0, int(rows));
  std::memcpy(x.data(), in.data(), x.size_bytes());
  net_->eval_forward(0);
  if (net_->holds_loss()) {
    net_->set_labels(0, *labels);
    correct += net_->eval_correct(0);
    return;
  }
  const auto out = net_->output(0);
  client.send_stage(PsClient::StageDir::kForward, done, batch, rows,
                    std::make_shared<const std::vector<float>>(out.begin(), out.end()),
                    std::move(labels), batches);
}

std::optional<double> StageWorker::evaluate(PsClient& client, Timeline* tl, uint64_t done) {
  const StageLayout& l = role_.layout;
  if (role_.replica != 0 || !l.evaluates_after(done)) return std::nullopt;
  client.wait_all(done);  // this stage's parameters after `done` iterations
  for (uint32_t layer = net_->first(); layer < net_->last(); ++layer) net_->params_ready(layer);
  const uint32_t rows = l.max_micro_rows();
  int64_t correct = 0, samples = 0;
  traced(tl, "eval", "test set after " + std::to_string(done), [&] {
    if (role_.stage == 0) {
      const data::Dataset& test = source_->test_set();
      if (test.n <= 0) throw JobError("the test set is empty: nothing to evaluate");
      const auto batches = uint32_t((uint64_t(test.n) + rows - 1) / rows);
      for (uint32_t b = 0; b < batches; ++b) {
        const uint64_t first = uint64_t(b) * rows;
        const auto m = uint32_t(std::min<uint64_t>(rows, uint64_t(test.n) - first));
        const float* images = test.images.data() + first * role_.in_width;
        eval_batch(client, done, b, batches, {images, m * role_.in_width},
                   std::make_shared<std::vector<int32_t>>(test.labels.begin() + first,
                                                          test.labels.begin() + first + m),
                   correct);
        samples += m;
      }
      return;
    }
    for (uint32_t b = 0, batches = 1; b < batches; ++b) {
      StageMessage m = client.wait_eval(done, b);
      batches = m.eval_batches;
      auto labels = std::make_shared<std::vector<int32_t>>(m.samples);
      std::memcpy(labels->data(), m.labels.data(), m.samples * sizeof(int32_t));
      eval_batch(client, done, b, batches,
                 {static_cast<const float*>(m.values.data()), m.samples * role_.in_width},
                 std::move(labels), correct);
      samples += m.samples;
    }
  });
  if (!net_->holds_loss()) return std::nullopt;
  return double(correct) / double(samples);
}

TrainResult StageWorker::train(PsClient& client, Timeline* tl) {
  using Clock = std::chrono::steady_clock;
  const StageLayout& l = role_.layout;
  const auto total = uint64_t(config_.job.iterations);
  client.start();
  const uint64_t first = client.start_iteration();
  if (first > 0) net_->skip_random_steps(first * l.micro_batches);
  TrainResult result;
  RunClock clock(first, total);  // as the data-parallel trainer's
  auto window = clock.start();
  auto iteration_start = window;
  // Each iteration's time into the metrics, as the data-parallel trainer's (split models had none).
  const auto observe = [&] {
    const auto now = Clock::now();
    client.metrics().iteration(std::chrono::duration<double>(now - iteration_start).count());
    iteration_start = now;
  };
  for (uint64_t t = first; t < total; ++t) {
    clock.at(t);
    if (t > first) {
      client.checkpoint(t);
      observe();
    }
    if (source_) source_->load(t);
    if (waits_for_all_) client.wait_all(t);
    for (uint32_t mb = 0; mb < l.micro_batches; ++mb) forward(client, tl, t, mb);
    for (uint32_t mb = l.micro_batches; mb-- > 0;) backward(client, tl, t, mb);
    if (net_->holds_loss()) {
      loss_sum_ += iter_loss_;
      ++loss_count_;
      result.last_loss = iter_loss_;
      iter_loss_ = 0;
    }
    const uint64_t done = t + 1;
    if (done < total) {
      if (auto acc = evaluate(client, tl, done)) report_eval(done, *acc);
    }
    if (config_.job.log_every > 0 &&
        (done % uint64_t(config_.job.log_every) == 0 || done == total)) {
      const auto now = Clock::now();
      const double ms = std::chrono::duration<double, std::milli>(now - window).count();
      const auto lvl =
          net_->holds_loss() && role_.replica == 0 ? spdlog::level::info : spdlog::level::debug;
      spdlog::log(lvl, "iter {}/{} stage {} loss {:.4f} {:.1f} ms/iter", done, total, role_.stage,
                  loss_count_ > 0 ? loss_sum_ / loss_count_ : 0.0,
                  ms / double(done % uint64_t(config_.job.log_every) == 0
                                  ? uint64_t(config_.job.log_every)
                                  : done % uint64_t(config_.job.log_every)));
      window = now;
      loss_sum_ = 0;
      loss_count_ = 0;
    }
  }
  if (total > first) client.checkpoint(total);
  client.wait_all(total);
  if (total > first) observe();
  clock.finish(result);
  if (total > first) {
    const auto acc = evaluate(client, tl, total);
    if (l.eval_at_end) {
      result.test_accuracy = acc;
    } else if (acc) {  // job.evaluate: false, and the last iteration a multiple of eval_every
      report_eval(total, *acc);
    }
  }
  return result;
}

void StageWorker::dump_params(const std::string& path) {
  std::vector<std::span<const float>> tensors;
  for (uint32_t key : role_.keys) tensors.push_back(net_->param(key));
  write_param_file(path, tensors);
}

}  // namespace psrt
