#include "worker/trainer.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <vector>

#include "config/job_config.h"
#include "core/durable_file.h"
#include "core/status.h"
#include "scheduler/schedule_policy.h"
#include "worker/run_clock.h"
#include "worker/traced.h"

namespace psrt {

uint64_t planned_iterations(const Config& config, const Backend& backend) {
  if (config.job.iterations > 0) return uint64_t(config.job.iterations);
  const int64_t per_epoch = backend.iterations_per_epoch();
  if (per_epoch <= 0) {
    throw ConfigError(config.source + ": job.iterations: must be set for the " +
                      config.model.backend + " backend (it has no epochs)");
  }
  return std::max<uint64_t>(1, uint64_t(std::llround(config.job.epochs * double(per_epoch))));
}

namespace {

std::string format_eta(double seconds) {
  const auto s = int64_t(seconds + 0.5);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", (long long)(s / 3600),
                (long long)(s / 60 % 60), (long long)(s % 60));
  return buf;
}

}  // namespace

namespace {

// Hands tensor `key`'s gradient to the client: from device memory where the backend keeps it
// there and the client compresses on the device (it never comes to the host uncompressed), else
// from host memory.
// With Adam correction and weight decay, the L2 term the servers' Adam would add (g + wd * p)
// is added here, where the parameters are: `scratch` holds the sum.
// Otherwise the gradient is lent where the backend keeps it still (no copy; IterationRunner
// reclaims it before the layer's next backward).
void push_gradient(PsClient& client, Backend& backend, uint32_t key, uint64_t iteration,
                   float weight_decay, std::vector<float>& scratch) {
  const float* on_device = backend.device_grad(key);
  if (on_device != nullptr && client.encodes_on_device()) {
    client.push_device(key, iteration, on_device);
  } else if (weight_decay > 0) {
    const std::span<const float> g = backend.grad(key);
    const std::span<const float> p = backend.param(key);
    scratch.resize(g.size());
    for (std::size_t i = 0; i < g.size(); ++i) scratch[i] = g[i] + weight_decay * p[i];
    client.push(key, iteration, scratch);
  } else if (backend.grads_stay_put()) {
    client.lend(key, iteration, backend.grad(key));
  } else {
    client.push(key, iteration, backend.grad(key));
  }
}

// Resumes at the servers' start iteration (0 on a fresh start); returns it.
uint64_t resume(const Config& config, uint32_t rank, Backend& backend, PsClient& client,
                uint64_t total) {
  const uint64_t first = client.start_iteration();
  if (first == 0) return first;
  if (first > total) {
    // A setting of this run, not a failure: refused (exit 2) like the other resume mismatches.
    throw ConfigError("the servers resumed iteration " + std::to_string(first) +
                      ", but this job runs " + std::to_string(total) +
                      " iterations (job.iterations or job.epochs: more than the checkpoint's, "
                      "to go on from it)");
  }
  backend.resume_at(first);
  if (rank == 0) {
    spdlog::info("resuming from the checkpoint of iteration {}", first);
    if (config.compression.codec != "none" && config.checkpoint.every == 0) {
      spdlog::warn("the workers' {} state (error-feedback residuals, momentum correction, "
                   "LACO's calibration) is checkpointed with checkpoint.every only: it restarts "
                   "empty, so this run will not match an uninterrupted one bit for bit",
                   config.compression.codec);
    }
  }
  return first;
}

// Worker 0's opening lines: what is trained, how, and the compression with its warnings.
void log_start(const Config& config, const ModelDesc& model, uint64_t total) {
  spdlog::info("training {} for {} iterations ({} workers x batch {}, mode {})", model.name, total,
               config.cluster.workers, config.job.batch_size, mode_name(config.scheduler.mode));
  const CompressionConfig& c = config.compression;
  for (const std::string& w : config.optimizer.unread) spdlog::warn("{}", w);
  for (const std::string& w : compression_warnings(config)) spdlog::warn("{}", w);
  if (c.codec == "none") return;
  spdlog::info("compression: {}{}{}{}, replies {}", c.codec,
               c.codec == "signsgd" ? std::string() : fmt::format(" density {}", c.density),
               c.error_feedback ? ", error feedback" : "",
               c.momentum > 0 ? fmt::format(", momentum {} on the workers (momentum "
                                            "correction; the servers run plain SGD)",
                                            c.momentum)
                              : std::string(),
               c.compress_replies ? "compressed" : "dense");
  if (c.adam) {
    spdlog::info("compression: Adam (beta1 {}, beta2 {}) on the workers, which compress its "
                 "direction (adam_correction; the servers run plain SGD)",
                 c.adam_beta1, c.adam_beta2);
  }
}

// One iteration's compute against the client: the forward waits for each layer's parameters
// (bigdl: for all of them), the backward hands each layer's gradients over as they are made.
class IterationRunner {
 public:
  IterationRunner(const Config& config, Backend& backend, PsClient& client, Timeline* timeline)
      : config_(config),
        model_(backend.desc()),
        backend_(backend),
        client_(client),
        timeline_(timeline),
        bigdl_(SchedulePolicy(config.scheduler.mode).forward_waits_for_all()),
        on_device_(!model_.tensors.empty() && backend.device_grad(0) != nullptr),
        lends_(backend.grads_stay_put()) {}

  void forward(uint64_t t) {
    if (bigdl_) traced(timeline_, "wait", "wait all params", [&] { client_.wait_all(t); });
    for (std::size_t l = 0; l < model_.layers.size(); ++l) {
      const std::string& name = model_.layers[l].name;
      if (!model_.layers[l].tensors.empty()) {
        if (!bigdl_) {
          traced(timeline_, "wait", "wait " + name, [&] { client_.wait_layer(uint32_t(l), t); });
        }
        backend_.params_ready(l);  // a device backend uploads the layer's new values here
      }
      traced(timeline_, "forward", "fwd " + name, [&] { backend_.forward_layer(l); });
    }
  }

  // A device backend queues a layer's backward and returns; its gradients are handed over
  // once the next layer's backward is queued too, so that the GPU computes that one while the
  // compressor (which waits for the gradient itself) encodes these. Host backends hand them
  // over at once. Either way in the order backward produces them.
  void backward(uint64_t t) {
    std::optional<std::size_t> handed_later;
    for (std::size_t l = model_.layers.size(); l-- > 0;) {
      // The last iteration's gradients of this layer, if lent, are off the wire (never waits in
      // synchronous training: see worker/lent_buffers.h).
      if (lends_) client_.reclaim(model_.layers[l].tensors);
      traced(timeline_, "backward", "bwd " + model_.layers[l].name,
             [&] { backend_.backward_layer(l); });
      if (!on_device_) {
        hand_over(l, t);
        continue;
      }
      if (handed_later) hand_over(*handed_later, t);
      handed_later = l;
    }
    if (handed_later) hand_over(*handed_later, t);
  }

 private:
  void hand_over(std::size_t l, uint64_t t) {
    const std::vector<uint32_t>& keys = model_.layers[l].tensors;
    if (on_device_ && client_.encodes_on_device() && keys.size() > 1) {
      // A layer's weight and bias compressed in one device batch.
      std::vector<const float*> grads;
      for (uint32_t key : keys) grads.push_back(backend_.device_grad(key));
      client_.push_device(keys, t, grads);
      return;
    }
    for (uint32_t key : keys) {
      push_gradient(client_, backend_, key, t, float(config_.compression.adam_weight_decay),
                    decayed_);
    }
  }

  const Config& config_;
  const ModelDesc& model_;
  Backend& backend_;
  PsClient& client_;
  Timeline* timeline_;
  const bool bigdl_;
  const bool on_device_;
  const bool lends_;
  std::vector<float> decayed_;  // push_gradient's scratch
};

// The progress line every job.log_every iterations: loss (or time per iteration), throughput and
// the time left.
class ProgressLog {
 public:
  using Clock = std::chrono::steady_clock;
  ProgressLog(const Config& config, uint32_t rank, int64_t per_epoch, uint64_t first,
              uint64_t total, Clock::time_point t0)
      : config_(config), rank_(rank), per_epoch_(per_epoch), first_(first), total_(total),
        t0_(t0), window_start_(t0) {}

  void add_loss(double loss) {
    loss_sum_ += loss;
    ++loss_count_;
  }

  // After iteration t; `done` = t + 1.
  void after(uint64_t t, uint64_t done) {
    const auto every = uint64_t(config_.job.log_every);
    if (config_.job.log_every <= 0 || (done % every != 0 && done != total_)) return;
    const auto now = Clock::now();
    const double window = std::chrono::duration<double>(now - window_start_).count();
    const double elapsed = std::chrono::duration<double>(now - t0_).count();
    const uint64_t in_window = done % every == 0 ? every : done % every;
    const double samples_per_s = double(in_window) * config_.job.batch_size *
                                 config_.cluster.workers / std::max(window, 1e-9);
    const double eta = elapsed / double(done - first_) * double(total_ - done);
    const auto lvl = rank_ == 0 ? spdlog::level::info : spdlog::level::debug;
    const std::string epoch =
        per_epoch_ > 0 ? std::to_string(t / uint64_t(per_epoch_) + 1) : std::string("-");
    if (loss_count_ > 0) {
      spdlog::log(lvl, "epoch {} iter {}/{} loss {:.4f} {:.0f} samples/s ETA {}", epoch, done,
                  total_, loss_sum_ / loss_count_, samples_per_s, format_eta(eta));
    } else {
      spdlog::log(lvl, "iter {}/{} {:.1f} ms/iter {:.0f} samples/s ETA {}", done, total_,
                  window / double(in_window) * 1e3, samples_per_s, format_eta(eta));
    }
    window_start_ = now;
    loss_sum_ = 0;
    loss_count_ = 0;
  }

 private:
  const Config& config_;
  const uint32_t rank_;
  const int64_t per_epoch_;
  const uint64_t first_, total_;
  const Clock::time_point t0_;
  Clock::time_point window_start_;
  double loss_sum_ = 0;
  int loss_count_ = 0;
};

// Worker 0's evaluation every job.eval_every iterations. After the last only without
// job.evaluate: train's caller evaluates then (with job.evaluate: false, the last multiple of N was
// never evaluated).
void maybe_evaluate(const Config& config, uint32_t rank, Backend& backend, PsClient& client,
                    uint64_t done, uint64_t total) {
  if (rank != 0 || config.job.eval_every <= 0 || done % uint64_t(config.job.eval_every) != 0 ||
      (done >= total && config.job.evaluate)) {
    return;
  }
  // Values for iteration `done` are needed first; the other workers keep computing meanwhile.
  client.wait_all(done);
  if (auto acc = backend.evaluate([&] { return client.failed(); })) report_eval(done, *acc);
}

}  // namespace

void report_eval(uint64_t done, double accuracy) {
  spdlog::info("iter {} test accuracy {:.4f}", done, accuracy);
  std::printf("PSRT_EVAL iteration=%llu accuracy=%.4f\n", (unsigned long long)done, accuracy);
  std::fflush(stdout);
}

TrainResult train(const Config& config, uint32_t rank, Backend& backend, PsClient& client,
                  Timeline* timeline) {
  using Clock = std::chrono::steady_clock;
  const uint64_t total = planned_iterations(config, backend);
  const int64_t per_epoch = backend.iterations_per_epoch();
  IterationRunner runner(config, backend, client, timeline);
  client.plan_iterations(total);
  client.start();
  const uint64_t first = resume(config, rank, backend, client, total);
  if (rank == 0) log_start(config, backend.desc(), total);
  TrainResult result;
  RunClock clock(first, total);
  const auto t0 = clock.start();
  ProgressLog progress(config, rank, per_epoch, first, total, t0);
  auto iteration_start = t0;
  for (uint64_t t = first; t < total; ++t) {
    clock.at(t, client.grouping_final_from());
    if (t > first) {
      client.checkpoint(t);  // the compression state after iteration t - 1
      const auto now = Clock::now();
      client.metrics().iteration(std::chrono::duration<double>(now - iteration_start).count());
      iteration_start = now;
    }
    backend.begin_iteration(t);
    runner.forward(t);
    if (auto loss = backend.loss()) {
      if (!std::isfinite(*loss)) {
        // Before any update the learning rate is not the cause (1024 fc layers without an
        // activation overflow at their initial values).
        throw JobError("loss is " + std::to_string(*loss) + " at iteration " + std::to_string(t) +
                       (t == 0 ? ", before any update: the initial network's outputs overflow (a "
                                 "deep stack without activations? inputs far from [0, 1]?)"
                               : ": training diverged (lower optimizer.lr?)"));
      }
      progress.add_loss(*loss);
      result.last_loss = *loss;
    }
    runner.backward(t);
    maybe_evaluate(config, rank, backend, client, t + 1, total);
    progress.after(t, t + 1);
  }
  if (total > first) client.checkpoint(total);
  client.wait_all(total);  // the final parameters
  // The last iteration ends with its parameters (the histogram was one short, and empty for one
  // iteration).
  if (total > first) {
    client.metrics().iteration(
        std::chrono::duration<double>(Clock::now() - iteration_start).count());
  }
  clock.finish(result);
  return result;
}

void dump_params(const std::string& path, Backend& backend) {
  std::vector<std::span<const float>> tensors;
  for (const auto& t : backend.desc().tensors) tensors.push_back(backend.param(t.key));
  write_param_file(path, tensors);
}

void write_param_file(const std::string& path,
                      const std::vector<std::span<const float>>& tensors) {
  std::vector<std::span<const uint8_t>> parts;
  for (const auto& t : tensors) {
    parts.emplace_back(reinterpret_cast<const uint8_t*>(t.data()), t.size_bytes());
  }
  if (Status st = write_durably(path, parts); !st) {
    throw JobError("job.dump_params: " + st.message());
  }
}

}  // namespace psrt
