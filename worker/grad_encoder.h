// Compresses each chunk of a gradient before the scheduler sends it, with per-tensor codec state
// (residuals for error feedback, LACO's calibration). Codec `none` sends the fp32 values as they
// are, without a copy. LACO with error feedback can also run on the GPU, on gradients in device
// memory (encode_device), where this build has CUDA and the machine a device.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "compress/codec.h"
#include "compress/codec_config.h"
#include "core/config.h"
#include "core/model.h"
#include "core/sharding.h"
#include "proto/psrt_fwd.h"

namespace psrt {

class GradEncoder {
 public:
  // Throws ConfigError on bad compression settings.
  GradEncoder(const CompressionConfig& config, const ModelDesc& model);
  ~GradEncoder();
  GradEncoder(const GradEncoder&) = delete;
  GradEncoder& operator=(const GradEncoder&) = delete;

  bool compresses() const { return codec_ != nullptr; }
  // Checkpoints: every tensor's codec state (residuals, momentum, LACO's calibration). An error
  // for a residual kept on the GPU (encode_device), which is not checkpointed.
  Status save_state(ByteWriter& out) const;
  Status load_state(ByteReader& in);
  bool has_state(uint32_t key) const { return states_.at(key) != nullptr; }
  wire::Codec wire_codec() const { return wire_codec_; }
  // Encodes chunk `c` of its tensor's gradient `grad` (the whole tensor) for `iteration`.
  std::shared_ptr<const std::vector<uint8_t>> encode(const ChunkDesc& c, uint64_t iteration,
                                                     std::span<const float> grad);

  // Whether encode_device() can run: the codec is laco with error feedback and without momentum
  // masking or Adam correction (host only), this build has CUDA and the machine a CUDA device.
  bool encodes_on_device() const { return on_device_; }
  // encode() for a gradient in device memory: `device_grad` is the whole tensor on the current
  // CUDA device, produced on the default stream (see compress/cuda/device_laco.h); it is no longer
  // read when this returns. The residuals stay on the device, so a tensor is encoded either here
  // or by encode(), never both (JobError). The device encoder is made on the first call, on the
  // device current then. Throws JobError, also when !encodes_on_device().
  std::shared_ptr<const std::vector<uint8_t>> encode_device(const ChunkDesc& c, uint64_t iteration,
                                                            const float* device_grad);
  // encode_device() of several chunks (of one or more tensors; grads[j] is chunks[j]'s tensor)
  // in one device batch where they allow (DeviceLacoEncoder::encode_batch): one launch sequence
  // and one wait for a layer's weight and bias. Payloads in chunks' order.
  std::vector<std::shared_ptr<const std::vector<uint8_t>>> encode_device_batch(
      std::span<const ChunkDesc> chunks, uint64_t iteration, std::span<const float* const> grads);

 private:
  enum class Where : uint8_t { kNotYet, kHost, kDevice };
  void encode_at(uint32_t key, Where where);  // records where a tensor's residual lives
  void device_for(uint32_t key);  // checks and records a device encode; makes the encoder
  struct Device;                              // the device encoder (grad_encoder.cc)

  std::unique_ptr<compress::Codec> codec_;
  wire::Codec wire_codec_;  // CODEC_NONE unless it compresses
  std::vector<std::unique_ptr<compress::CodecState>> states_;  // by tensor key
  compress::CodecConfig codec_config_;
  std::vector<compress::TensorInfo> tensors_;  // by tensor key
  std::vector<Where> where_;                   // by tensor key
  bool on_device_ = false;
  std::unique_ptr<Device> device_;
};

}  // namespace psrt
