#include "compress/registry.h"

#include <limits>

#include "compress/error_feedback.h"
#include "compress/graddrop_codec.h"
#include "compress/laco_codec.h"
#include "compress/none_codec.h"
#include "compress/signsgd_codec.h"
#include "compress/topk_codec.h"

namespace psrt::compress {

void CodecRegistry::add(std::string name, Factory factory) {
  factories_[std::move(name)] = std::move(factory);
}

std::vector<std::string> CodecRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& [name, factory] : factories_) out.push_back(name);
  return out;
}

Result<std::unique_ptr<Codec>> CodecRegistry::make(const CodecConfig& config) const {
  PSRT_RETURN_IF_ERROR(validate(config));
  auto it = factories_.find(config.codec);
  if (it == factories_.end()) {
    return Status::error("compression.codec = " + config.codec + ": not registered");
  }
  std::unique_ptr<Codec> codec = it->second(config);
  if (config.error_feedback && codec->id() != CodecId::kNone && config.adam) {
    codec = std::make_unique<ErrorFeedback>(
        std::move(codec),
        AdamCorrection{config.adam_beta1, config.adam_beta2, config.adam_eps,
                       config.adam_variance_workers(), config.adam_select_gradient,
                       config.adam_residual_cap > 0 ? float(config.adam_residual_cap)
                                                    : std::numeric_limits<float>::infinity()});
  } else if (config.error_feedback && codec->id() != CodecId::kNone) {
    codec = std::make_unique<ErrorFeedback>(std::move(codec), float(config.momentum),
                                            config.momentum_masking);
  }
  return codec;
}

CodecRegistry default_registry() {
  CodecRegistry r;
  r.add("none", [](const CodecConfig&) { return std::make_unique<NoneCodec>(); });
  r.add("laco", [](const CodecConfig& c) { return std::make_unique<LacoCodec>(c); });
  r.add("signsgd", [](const CodecConfig& c) { return std::make_unique<SignSgdCodec>(c); });
  r.add("graddrop", [](const CodecConfig& c) { return std::make_unique<GradDropCodec>(c); });
  r.add("topk", [](const CodecConfig& c) { return std::make_unique<TopKCodec>(c); });
  return r;
}

Result<std::unique_ptr<Codec>> make_codec(const CodecConfig& config) {
  return default_registry().make(config);
}

}  // namespace psrt::compress
