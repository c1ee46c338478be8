// PsClient, compute-thread side: start, waits, pushes, finish.
#include "worker/ps_client.h"

#include <spdlog/spdlog.h>

#include "core/config_limits.h"
#include "core/endpoints.h"
#include "core/status.h"

#include <stdexcept>

namespace psrt {

PsClient::PsClient(const Config& config, uint32_t rank, const ModelDesc& model, ParamAccess params,
                   Timeline* timeline, std::optional<StageRole> stage, zmq::context_t* shared)
    : config_(config),
      rank_(rank),
      self_{wire::WORKER, rank, config.job.id},
      model_(model),
      params_(std::move(params)),
      timeline_(timeline),
      encoder_(config.compression, model),
      encoder_ckpt_(config, rank),
      replies_(config.compression),
      metrics_(
          Metrics::serve(config.metrics, "worker", int(rank), config.cluster.servers + int(rank))),
      curve_(config.security.curve ? std::optional(load_curve_keys(config.security))
                                   : std::nullopt),
      identity_(process_identity(wire::WORKER, rank)),
      log_(config.limits.log_lines_per_s),
      messenger_(config.job.id,
                 socket_options(config.limits, curve_ ? &*curve_ : nullptr,
                                config.scheduler.credit_bytes, uses_ipv6(config.cluster)),
                 metrics_, log_, shared),
      drops_(DropWatch::grace_for(config.cluster.heartbeat_s)),
      queue_(config.scheduler.mode, config.scheduler.credit_bytes),
      stage_(std::move(stage)) {
  if (int64_t(rank) >= config.cluster.workers) {
    throw ConfigError("worker rank " + std::to_string(rank) + " is outside cluster.workers = " +
                      std::to_string(config.cluster.workers));
  }
  priority_.resize(model.tensors.size());
  for (const auto& t : model.tensors) priority_[t.key] = t.key;
  if (!config.scheduler.priority.empty()) {
    if (config.scheduler.priority.size() != model.tensors.size()) {
      throw ConfigError(config.source + ": scheduler.priority: lists " +
                        std::to_string(config.scheduler.priority.size()) +
                        " priorities, the model has " + std::to_string(model.tensors.size()) +
                        " tensors");
    }
    for (std::size_t k = 0; k < priority_.size(); ++k) {
      priority_[k] = uint32_t(config.scheduler.priority[k]);
    }
  }
  held_.assign(model.tensors.size(), stage_ ? 0 : 1);
  if (stage_) {
    for (uint32_t key : stage_->keys) held_.at(key) = 1;
  }
  // bigdl holds the pushes back until all of this worker's tensors are in.
  queue_.expect_tensors(stage_ ? uint32_t(stage_->keys.size()) : uint32_t(model.tensors.size()));
  encoder_checkpoints_ = encoder_ckpt_.start();
  servers_.push_back(messenger_.add_dealer("server 0", identity_));
  check_coordinator_port(config.cluster.coordinator);
  messenger_.socket(servers_[0]).connect(config.cluster.coordinator);
  control_.emplace(messenger_, servers_[0], self_, config.cluster,
                   std::size_t(config.limits.max_string_bytes), control_events());
  register_server(0);
  if (stage_) bind_stage();
  if (metrics_.enabled()) {
    spdlog::info("metrics on {}", metrics_url(config.metrics.host, metrics_.port()));
  }
  io_ = std::thread([this] { io_loop(); });
}

PsClient::~PsClient() {
  {
    std::lock_guard lock(mu_);
    if (!error_ && !finished_) error_ = "worker stopped";
  }
  messenger_.wakeup().notify();
  if (io_.joinable()) io_.join();
}

template <typename Pred>
void PsClient::wait_for(Pred pred) {
  std::unique_lock lock(mu_);
  if (pred()) {
    waiting_since_.reset();
    return;
  }
  const auto t0 = std::chrono::steady_clock::now();
  cv_.wait(lock, [&] { return error_.has_value() || pred(); });
  stats_.wait_seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  waiting_since_.reset();
  if (error_ && !pred()) {
    if (refused_) throw ConfigError(*error_);
    throw JobError(*error_);
  }
}

void PsClient::start() {
  wait_for([&] { return started_; });
  const uint64_t first = start_iteration();
  if (first > 0 && encoder_ckpt_.enabled() && !encoder_checkpoints_.empty()) {
    // A file that passed the registration's checks but does not fit this run's codec settings
    // (compression.momentum_correction or adam_correction changed): as for another codec, the
    // state restarts empty, where the job ended after the servers had loaded theirs.
    if (Status st = encoder_ckpt_.restore(first, encoder_); !st) {
      spdlog::warn("--resume: {}; this worker's compression state restarts empty, so the run "
                   "will not match an uninterrupted one bit for bit",
                   st.message());
    } else {
      std::vector<uint8_t> has(model_.tensors.size());
      for (uint32_t key = 0; key < has.size(); ++key) has[key] = encoder_.has_state(key);
      if (const std::string w = state_split_warning(has, held_); !w.empty()) spdlog::warn("{}", w);
    }
  }
  std::lock_guard lock(mu_);
  stats_.wait_seconds = 0;  // what training waited, not the start (registration, the INITs)
}

uint64_t PsClient::start_iteration() const {
  std::lock_guard lock(mu_);
  return start_iteration_;
}

bool PsClient::layer_ready(uint32_t layer, uint64_t iteration) const {
  for (uint32_t key : model_.layers[layer].tensors) {
    for (uint32_t id : shards_.tensor_chunks(key)) {
      if (version_[id] < int64_t(iteration)) return false;
    }
  }
  return true;
}

void PsClient::wait_layer(uint32_t layer, uint64_t iteration) {
  if (model_.layers.at(layer).tensors.empty()) return;
  {
    std::lock_guard lock(mu_);
    waiting_since_ = std::chrono::steady_clock::now();
    waiting_layer_ = layer;
    waiting_iteration_ = iteration;
    missing_ = count_missing();
  }
  wait_for([&] { return layer_ready(layer, iteration); });
}

void PsClient::wait_all(uint64_t iteration) {
  {
    std::lock_guard lock(mu_);
    waiting_since_ = std::chrono::steady_clock::now();
    waiting_layer_ = -1;
    waiting_iteration_ = iteration;
    missing_ = count_missing();
  }
  wait_for([&] {
    for (const auto& c : shards_.chunks()) {
      if (held_[c.key] && version_[c.id] < int64_t(iteration)) return false;
    }
    return true;
  });
}

bool PsClient::waited_for(const ChunkDesc& c) const {
  return held_[c.key] &&
         (waiting_layer_ < 0 || model_.tensors[c.key].layer == uint32_t(waiting_layer_));
}

std::size_t PsClient::count_missing() const {
  std::size_t n = 0;
  const auto count = [&](const ChunkDesc& c) {
    n += waited_for(c) && version_[c.id] < int64_t(waiting_iteration_) ? 1 : 0;
  };
  if (waiting_layer_ < 0) {
    for (const auto& c : shards_.chunks()) count(c);
    return n;
  }
  // A layer's wait looks at that layer's chunks only (once per layer per iteration).
  for (uint32_t key : model_.layers[std::size_t(waiting_layer_)].tensors) {
    for (uint32_t id : shards_.tensor_chunks(key)) count(shards_.chunks()[id]);
  }
  return n;
}

void PsClient::check_key(uint32_t key, std::optional<std::size_t> elements) const {
  if (key >= model_.tensors.size() || (elements && *elements != model_.tensors[key].num_elements)) {
    throw std::invalid_argument("push: tensor " + std::to_string(key) + " with " +
                                (elements ? std::to_string(*elements) : std::string("its")) +
                                " elements does not fit the model");
  }
}

template <typename Encode>
PsClient::Command PsClient::compressed(uint32_t key, uint64_t iteration, Encode encode) {
  Command cmd{key, iteration, nullptr, std::chrono::steady_clock::now(), {}};
  // The shard map is complete once start() has returned.
  for (uint32_t id : shards_.tensor_chunks(key)) {
    cmd.payloads.push_back(encode(shards_.chunks()[id]));
  }
  return cmd;
}

void PsClient::push(uint32_t key, uint64_t iteration, std::span<const float> grad) {
  if (!encoder_.compresses()) {
    push(key, iteration, std::make_shared<const std::vector<float>>(grad.begin(), grad.end()));
    return;
  }
  check_key(key, grad.size());
  // The codec reads the caller's buffer: no copy.
  enqueue(compressed(key, iteration,
                     [&](const ChunkDesc& c) { return encoder_.encode(c, iteration, grad); }));
}

void PsClient::push(uint32_t key, uint64_t iteration,
                    std::shared_ptr<const std::vector<float>> buf) {
  check_key(key, buf->size());
  if (encoder_.compresses()) {
    push(key, iteration, std::span<const float>(*buf));
    return;
  }
  Command cmd{key, iteration, nullptr, std::chrono::steady_clock::now(), {}};
  cmd.values = buf->data();
  cmd.grad = std::move(buf);
  enqueue(std::move(cmd));
}

void PsClient::lend(uint32_t key, uint64_t iteration, std::span<const float> grad) {
  check_key(key, grad.size());
  if (encoder_.compresses()) {
    push(key, iteration, grad);
    return;
  }
  Command cmd{key, iteration, lent_.lend(key, grad.data()), std::chrono::steady_clock::now(), {}};
  cmd.values = grad.data();
  enqueue(std::move(cmd));
}

void PsClient::reclaim(std::span<const uint32_t> keys) {
  if (lent_.reclaim(keys)) return;
  wait_for([] { return false; });  // abandoned: the client's error, thrown
}

void PsClient::push_device(uint32_t key, uint64_t iteration, const float* device_grad) {
  if (!encoder_.encodes_on_device()) {
    throw JobError(
        "push_device: gradients are compressed on the device only with laco, error "
        "feedback and no momentum masking or Adam correction, a CUDA build and a device");
  }
  check_key(key, std::nullopt);
  if (device_grad == nullptr) throw std::invalid_argument("push_device: no gradient");
  enqueue(compressed(key, iteration, [&](const ChunkDesc& c) {
    return encoder_.encode_device(c, iteration, device_grad);
  }));
}

void PsClient::push_device(std::span<const uint32_t> keys, uint64_t iteration,
                           std::span<const float* const> device_grads) {
  if (!encoder_.encodes_on_device()) {
    throw JobError(
        "push_device: gradients are compressed on the device only with laco, error "
        "feedback and no momentum masking or Adam correction, a CUDA build and a device");
  }
  if (keys.size() != device_grads.size()) throw std::invalid_argument("push_device: sizes");
  std::vector<ChunkDesc> chunks;
  std::vector<const float*> grads;
  for (size_t k = 0; k < keys.size(); ++k) {
    check_key(keys[k], std::nullopt);
    if (device_grads[k] == nullptr) throw std::invalid_argument("push_device: no gradient");
    for (uint32_t id : shards_.tensor_chunks(keys[k])) {
      chunks.push_back(shards_.chunks()[id]);
      grads.push_back(device_grads[k]);
    }
  }
  auto payloads = encoder_.encode_device_batch(chunks, iteration, grads);
  size_t at = 0;
  for (const uint32_t key : keys) {
    Command cmd{key, iteration, nullptr, std::chrono::steady_clock::now(), {}};
    const size_t count = shards_.tensor_chunks(key).size();
    for (size_t c = 0; c < count; ++c) cmd.payloads.push_back(std::move(payloads.at(at++)));
    enqueue(std::move(cmd));
  }
}

void PsClient::enqueue(Command cmd) {
  bool first = false;
  {
    std::lock_guard lock(mu_);
    if (error_) throw JobError(*error_);
    first = commands_.empty();
    commands_.push_back(std::move(cmd));
  }
  // Commands queued behind another are taken with it (take_commands swaps the whole queue, after
  // the wake-up the first one sent): one wake-up per batch, not per tensor.
  if (first) messenger_.wakeup().notify();
}

StageMessage PsClient::wait_stage(StageDir dir, uint64_t iteration, uint32_t micro_batch) {
  return wait_inbox(
      stage_inbox_[int(dir)], {iteration, micro_batch},
      std::string(dir == StageDir::kForward ? "activations" : "activation gradients") +
          " of iteration " + std::to_string(iteration) + " micro-batch " +
          std::to_string(micro_batch) + " from " +
          stage_peer(dir == StageDir::kForward ? StageDir::kBackward : StageDir::kForward));
}

StageMessage PsClient::wait_eval(uint64_t done, uint32_t batch) {
  return wait_inbox(eval_inbox_, {done, batch},
                    "evaluation batch " + std::to_string(batch) + " after iteration " +
                        std::to_string(done) + " from " + stage_peer(StageDir::kBackward));
}

StageMessage PsClient::wait_inbox(std::map<std::pair<uint64_t, uint32_t>, StageMessage>& inbox,
                                  std::pair<uint64_t, uint32_t> key, std::string what) {
  {
    std::lock_guard lock(mu_);
    waiting_since_ = std::chrono::steady_clock::now();
    waiting_stage_ = std::move(what);
  }
  wait_for([&] { return inbox.count(key) > 0; });
  std::lock_guard lock(mu_);
  waiting_stage_.clear();
  auto node = inbox.extract(key);
  return std::move(node.mapped());
}

void PsClient::finish() {
  {
    std::lock_guard lock(mu_);
    want_shutdown_ = true;
  }
  messenger_.wakeup().notify();
  wait_for([&] { return finished_; });
}

ClientStats PsClient::stats() const {
  std::lock_guard lock(mu_);
  ClientStats s = stats_;
  s.messages_sent = messenger_.messages_sent();
  s.messages_received = messenger_.messages_received();
  return s;
}

}  // namespace psrt
