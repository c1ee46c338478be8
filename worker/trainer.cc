#include "worker/trainer.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <optional>
#include <vector>

#include "core/status.h"
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
  } else {
    client.push(key, iteration, backend.grad(key));
  }
}

}  // namespace

TrainResult train(const Config& config, uint32_t rank, Backend& backend, PsClient& client,
                  Timeline* timeline) {
  using Clock = std::chrono::steady_clock;
  const ModelDesc& model = backend.desc();
  const uint64_t total = planned_iterations(config, backend);
  const int64_t per_epoch = backend.iterations_per_epoch();
  const bool bigdl = config.scheduler.mode == Mode::kBigdl;
  const std::size_t layers = model.layers.size();
  const bool on_device = !model.tensors.empty() && backend.device_grad(0) != nullptr;

  client.start();
  const uint64_t first = client.start_iteration();
  if (first > 0) {
    if (first > total) {
      throw JobError("the servers resumed iteration " + std::to_string(first) +
                     ", but this job runs " + std::to_string(total) + " iterations");
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
  }
  if (rank == 0) {
    spdlog::info("training {} for {} iterations ({} workers x batch {}, mode {})", model.name,
                 total, config.cluster.workers, config.job.batch_size,
                 mode_name(config.scheduler.mode));
    const CompressionConfig& c = config.compression;
    if (c.codec != "none") {
      spdlog::info("compression: {} density {}{}{}, replies {}", c.codec, c.density,
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
      for (const std::string& w : compression_warnings(config)) spdlog::warn("{}", w);
    }
  }
  TrainResult result;
  RunClock clock(first, total);
  const auto t0 = clock.start();
  auto window_start = t0;
  double loss_sum = 0;
  int loss_count = 0;
  auto iteration_start = t0;
  std::vector<float> decayed;  // push_gradient's scratch
  for (uint64_t t = first; t < total; ++t) {
    clock.at(t);
    if (t > first) {
      client.checkpoint(t);  // the compression state after iteration t - 1
      const auto now = Clock::now();
      client.metrics().iteration(std::chrono::duration<double>(now - iteration_start).count());
      iteration_start = now;
    }
    backend.begin_iteration(t);
    if (bigdl) traced(timeline, "wait", "wait all params", [&] { client.wait_all(t); });
    for (std::size_t l = 0; l < layers; ++l) {
      const std::string& name = model.layers[l].name;
      if (!model.layers[l].tensors.empty()) {
        if (!bigdl) traced(timeline, "wait", "wait " + name, [&] { client.wait_layer(uint32_t(l), t); });
        backend.params_ready(l);  // a device backend uploads the layer's new values here
      }
      traced(timeline, "forward", "fwd " + name, [&] { backend.forward_layer(l); });
    }
    if (auto loss = backend.loss()) {
      if (!std::isfinite(*loss)) {
        throw JobError("loss is " + std::to_string(*loss) + " at iteration " + std::to_string(t) +
                       ": training diverged (lower optimizer.lr?)");
      }
      loss_sum += *loss;
      ++loss_count;
      result.last_loss = *loss;
    }
    // A device backend queues a layer's backward and returns; its gradients are handed over
    // once the next layer's backward is queued too, so that the GPU computes that one while the
    // compressor (which waits for the gradient itself) encodes these. Host backends hand them
    // over at once. Either way in the order backward produces them.
    std::optional<std::size_t> handed_later;
    auto hand_over = [&](std::size_t l) {
      const std::vector<uint32_t>& keys = model.layers[l].tensors;
      if (on_device && client.encodes_on_device() && keys.size() > 1) {
        // A layer's weight and bias compressed in one device batch.
        std::vector<const float*> grads;
        for (uint32_t key : keys) grads.push_back(backend.device_grad(key));
        client.push_device(keys, t, grads);
        return;
      }
      for (uint32_t key : keys) {
        push_gradient(client, backend, key, t, float(config.compression.adam_weight_decay),
                      decayed);
      }
    };
    for (std::size_t l = layers; l-- > 0;) {
      traced(timeline, "backward", "bwd " + model.layers[l].name, [&] { backend.backward_layer(l); });
      if (!on_device) {
        hand_over(l);
        continue;
      }
      if (handed_later) hand_over(*handed_later);
      handed_later = l;
    }
    if (handed_later) hand_over(*handed_later);
    const uint64_t done = t + 1;
    if (rank == 0 && config.job.eval_every > 0 && done % uint64_t(config.job.eval_every) == 0 &&
        done < total) {
      // Values for iteration `done` are needed first; the other workers keep computing meanwhile.
      client.wait_all(done);
      if (auto acc = backend.evaluate()) {
        spdlog::info("iter {} test accuracy {:.4f}", done, *acc);
        std::printf("PSRT_EVAL iteration=%llu accuracy=%.4f\n", (unsigned long long)done, *acc);
        std::fflush(stdout);
      }
    }
    if (config.job.log_every > 0 && (done % uint64_t(config.job.log_every) == 0 || done == total)) {
      const auto now = Clock::now();
      const double window = std::chrono::duration<double>(now - window_start).count();
      const double elapsed = std::chrono::duration<double>(now - t0).count();
      const uint64_t in_window = done % uint64_t(config.job.log_every) == 0
                                     ? uint64_t(config.job.log_every)
                                     : done % uint64_t(config.job.log_every);
      const double samples_per_s = double(in_window) * config.job.batch_size *
                                   config.cluster.workers / std::max(window, 1e-9);
      const double eta = elapsed / double(done - first) * double(total - done);
      const auto lvl = rank == 0 ? spdlog::level::info : spdlog::level::debug;
      const std::string epoch =
          per_epoch > 0 ? std::to_string(t / uint64_t(per_epoch) + 1) : std::string("-");
      if (loss_count > 0) {
        spdlog::log(lvl, "epoch {} iter {}/{} loss {:.4f} {:.0f} samples/s ETA {}", epoch, done,
                    total, loss_sum / loss_count, samples_per_s, format_eta(eta));
      } else {
        spdlog::log(lvl, "iter {}/{} {:.1f} ms/iter {:.0f} samples/s ETA {}", done, total,
                    window / double(in_window) * 1e3, samples_per_s, format_eta(eta));
      }
      window_start = now;
      loss_sum = 0;
      loss_count = 0;
    }
  }
  if (total > first) client.checkpoint(total);
  client.wait_all(total);  // the final parameters
  clock.finish(result);
  return result;
}

void dump_params(const std::string& path, Backend& backend) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw JobError("cannot write parameters to " + path);
  for (const auto& t : backend.desc().tensors) {
    auto p = backend.param(t.key);
    out.write(reinterpret_cast<const char*>(p.data()), std::streamsize(p.size_bytes()));
  }
  if (!out) throw JobError("failed writing parameters to " + path);
}

}  // namespace psrt
