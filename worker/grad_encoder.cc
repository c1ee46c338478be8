#include "worker/grad_encoder.h"

#include "compress/job_config.h"
#include "compress/registry.h"
#include "core/status.h"

namespace psrt {

GradEncoder::GradEncoder(const CompressionConfig& config, const ModelDesc& model) {
  if (config.codec == "none") return;
  auto made = compress::make_codec(compress::codec_config(config));
  if (!made) throw ConfigError(made.status().message());
  codec_ = std::move(made.value());
  wire_codec_ = static_cast<wire::Codec>(codec_->id());
  for (const auto& t : model.tensors) {
    compress::TensorInfo info;
    info.num_elements = int64_t(t.num_elements);
    info.layer = int(t.layer);
    info.num_layers = int(model.layers.size());
    states_.push_back(codec_->make_state(info));
  }
}

std::shared_ptr<const std::vector<uint8_t>> GradEncoder::encode(const ChunkDesc& c,
                                                                uint64_t iteration,
                                                                std::span<const float> grad) {
  auto payload = std::make_shared<std::vector<uint8_t>>();
  compress::ChunkInput in;
  in.offset = int64_t(c.offset);
  in.values = grad.subspan(c.offset, c.length);
  in.iteration = int64_t(iteration);
  const Status st = codec_->encode(*states_[c.key], in, *payload);
  if (!st) throw JobError("compressing tensor " + std::to_string(c.key) + ": " + st.message());
  return payload;
}

}  // namespace psrt
