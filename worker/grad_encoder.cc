#include "worker/grad_encoder.h"

#include "compress/job_config.h"
#include "compress/registry.h"
#include "core/status.h"
#include "psrt.pb.h"

#include <stdexcept>

#if PSRT_WITH_CUDA
#include "compress/cuda/cuda_lads.h"
#include "compress/cuda/device_laco.h"
#endif

namespace psrt {

#if PSRT_WITH_CUDA
struct GradEncoder::Device {
  std::unique_ptr<compress::cuda::DeviceLacoEncoder> encoder;
};
#else
struct GradEncoder::Device {};
#endif

GradEncoder::GradEncoder(const CompressionConfig& config, const ModelDesc& model)
    : wire_codec_(wire::CODEC_NONE) {
  if (config.codec == "none") return;
  codec_config_ = config;
  auto made = compress::make_codec(codec_config_);
  if (!made) throw ConfigError(made.status().message());
  codec_ = std::move(made.value());
  wire_codec_ = static_cast<wire::Codec>(codec_->id());
  for (const auto& t : model.tensors) {
    compress::TensorInfo info;
    info.num_elements = int64_t(t.num_elements);
    info.layer = int(t.layer);
    info.num_layers = int(model.layers.size());
    tensors_.push_back(info);
  }
  // States are made on a tensor's first encode, where it runs: a residual on the host or the
  // device, never both.
  states_.resize(tensors_.size());
  where_.assign(tensors_.size(), Where::kNotYet);
#if PSRT_WITH_CUDA
  // cudaGetDeviceCount only for the one codec that can use it: it starts the CUDA driver.
  on_device_ = codec_config_.codec == "laco" && codec_config_.error_feedback &&
               !codec_config_.momentum_masking && !codec_config_.adam &&
               codec_config_.quant_bits != 1 && compress::cuda::device_available();
#endif
}

GradEncoder::~GradEncoder() = default;

Status GradEncoder::save_state(ByteWriter& out) const {
  out.put<uint32_t>(uint32_t(states_.size()));
  for (std::size_t key = 0; key < states_.size(); ++key) {
    if (where_[key] == Where::kDevice) {
      return Status::error("tensor " + std::to_string(key) +
                           "'s residual is on the GPU, where it is not checkpointed");
    }
    out.put<uint8_t>(states_[key] ? 1 : 0);
    if (states_[key]) codec_->save_state(*states_[key], out);
  }
  return Status::ok();
}

namespace {
constexpr const char* kOtherSettings =
    "the saved codec state does not fit this run's (compression.codec, momentum_correction or "
    "adam_correction changed since the checkpoint?)";
}  // namespace

Status GradEncoder::load_state(ByteReader& in) {
  if (in.get<uint32_t>() != states_.size()) {
    return Status::error("the saved codec state is for " + std::to_string(states_.size()) +
                         " tensors' worth of another model");
  }
  // All or nothing: a file that does not fit leaves the encoder as it was (empty at a resume).
  std::vector<std::unique_ptr<compress::CodecState>> loaded(states_.size());
  for (std::size_t key = 0; key < states_.size(); ++key) {
    const auto present = in.get<uint8_t>();
    // The file passed its checksum: what does not parse is another codec configuration's state
    // (adam_correction's read as momentum_correction's was called "truncated").
    if (in.failed() || present > 1) return Status::error(kOtherSettings);
    if (!present) continue;
    loaded[key] = codec_->make_state(tensors_[key]);
    PSRT_RETURN_IF_ERROR(codec_->load_state(*loaded[key], in));
  }
  if (in.failed() || in.left() != 0) return Status::error(kOtherSettings);
  for (std::size_t key = 0; key < states_.size(); ++key) {
    if (!loaded[key]) continue;
    states_[key] = std::move(loaded[key]);
    where_[key] = Where::kHost;
  }
  return Status::ok();
}

void GradEncoder::encode_at(uint32_t key, Where where) {
  if (where_[key] == where) return;
  if (where_[key] != Where::kNotYet) {
    throw JobError("compressing tensor " + std::to_string(key) + ": its residual is on the " +
                   (where_[key] == Where::kHost ? "host" : "device") +
                   ", the gradient in the other memory");
  }
  where_[key] = where;
}

std::shared_ptr<const std::vector<uint8_t>> GradEncoder::encode(const ChunkDesc& c,
                                                                uint64_t iteration,
                                                                std::span<const float> grad) {
  encode_at(c.key, Where::kHost);
  auto& state = states_[c.key];
  if (state == nullptr) state = codec_->make_state(tensors_[c.key]);
  auto payload = std::make_shared<std::vector<uint8_t>>();
  compress::ChunkInput in;
  in.offset = int64_t(c.offset);
  in.values = grad.subspan(c.offset, c.length);
  in.iteration = int64_t(iteration);
  const Status st = codec_->encode(*state, in, *payload);
  if (!st) throw JobError("compressing tensor " + std::to_string(c.key) + ": " + st.message());
  return payload;
}

std::shared_ptr<const std::vector<uint8_t>> GradEncoder::encode_device(const ChunkDesc& c,
                                                                       uint64_t iteration,
                                                                       const float* device_grad) {
  device_for(c.key);
#if PSRT_WITH_CUDA
  auto payload = std::make_shared<std::vector<uint8_t>>();
  compress::cuda::DeviceChunk chunk;
  chunk.key = c.key;
  chunk.offset = int64_t(c.offset);
  chunk.length = int64_t(c.length);
  chunk.grad = device_grad;
  chunk.iteration = int64_t(iteration);
  const Status st = device_->encoder->encode(chunk, *payload);
  if (!st) throw JobError("compressing tensor " + std::to_string(c.key) + ": " + st.message());
  return payload;
#else
  (void)iteration;
  (void)device_grad;
  return nullptr;  // unreachable: on_device_ is false without CUDA
#endif
}

void GradEncoder::device_for(uint32_t key) {
  if (!on_device_) {
    throw JobError("compressing tensor " + std::to_string(key) +
                   " on the device: needs laco with error feedback, CUDA and a device");
  }
  encode_at(key, Where::kDevice);
#if PSRT_WITH_CUDA
  if (device_ == nullptr) {
    auto made = compress::cuda::DeviceLacoEncoder::create(codec_config_, tensors_);
    if (!made) throw JobError("compressing on the device: " + made.status().message());
    device_ = std::make_unique<Device>(Device{std::move(*made)});
  }
#endif
}

std::vector<std::shared_ptr<const std::vector<uint8_t>>> GradEncoder::encode_device_batch(
    std::span<const ChunkDesc> chunks, uint64_t iteration, std::span<const float* const> grads) {
  if (grads.size() != chunks.size()) throw std::invalid_argument("encode_device_batch: sizes");
  for (const ChunkDesc& c : chunks) device_for(c.key);
  std::vector<std::shared_ptr<const std::vector<uint8_t>>> out;
#if PSRT_WITH_CUDA
  std::vector<compress::cuda::DeviceChunk> device_chunks;
  for (size_t j = 0; j < chunks.size(); ++j) {
    device_chunks.push_back({.key = chunks[j].key,
                             .offset = int64_t(chunks[j].offset),
                             .length = int64_t(chunks[j].length),
                             .grad = grads[j],
                             .iteration = int64_t(iteration)});
  }
  std::vector<std::vector<uint8_t>> payloads;
  const Status st = device_->encoder->encode_batch(device_chunks, payloads);
  if (!st) throw JobError("compressing tensors on the device: " + st.message());
  for (auto& p : payloads) out.push_back(std::make_shared<std::vector<uint8_t>>(std::move(p)));
#else
  (void)iteration;
#endif
  return out;
}

}  // namespace psrt
