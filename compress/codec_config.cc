#include "compress/codec_config.h"

#include <cmath>
#include <optional>
#include <string>

namespace psrt::compress {

namespace {

Status bad(const std::string& key, const std::string& value, const std::string& allowed) {
  return Status::error("compression." + key + " = " + value + ": " + allowed);
}

}  // namespace

std::optional<CodecProblem> first_problem(const CodecConfig& c, const CodecRuleInputs& in) {
  const bool none = c.codec == "none";
  const bool sparsifying = c.codec == "laco" || c.codec == "graddrop" || c.codec == "topk";
  const bool optimizer_known = !in.optimizer_type.empty();
  if (c.compress_replies && none) {
    return CodecProblem{"replies", "compressed needs a codec other than none"};
  }
  if (c.momentum_masking && !in.momentum_correction) {
    return CodecProblem{"momentum_masking", "needs momentum_correction: true"};
  }
  if (c.momentum_masking && !sparsifying) {
    return CodecProblem{"momentum_masking",
                        "needs a sparsifying codec (laco, graddrop, topk), not " + c.codec};
  }
  if (in.momentum_correction) {
    if (none) return CodecProblem{"momentum_correction", "needs a codec other than none"};
    if (!c.error_feedback) return CodecProblem{"momentum_correction", "needs error_feedback: true"};
    if (optimizer_known && (in.optimizer_type != "sgd" || in.optimizer_momentum == 0)) {
      return CodecProblem{"momentum_correction", "needs optimizer sgd with momentum > 0"};
    }
  }
  if (c.adam_select_gradient && (!in.adam_correction || c.codec != "laco" || c.quant_bits == 8)) {
    return CodecProblem{"adam_select",
                        "gradient needs adam_correction, codec laco and quant_bits 1 or 32"};
  }
  if (in.adam_correction) {
    if (optimizer_known && in.optimizer_type != "adam") {
      return CodecProblem{"adam_correction", "needs optimizer adam"};
    }
    if (none) return CodecProblem{"adam_correction", "needs a codec other than none"};
    if (!c.error_feedback) return CodecProblem{"adam_correction", "needs error_feedback: true"};
  }
  return std::nullopt;
}

Status validate(const CodecConfig& c) {
  if (c.codec != "none" && c.codec != "laco" && c.codec != "signsgd" && c.codec != "graddrop" &&
      c.codec != "topk") {
    return bad("codec", c.codec, "one of none, laco, signsgd, graddrop, topk");
  }
  if (!(c.density > 0.0 && c.density <= 1.0)) {
    return bad("density", std::to_string(c.density), "in (0, 1]");
  }
  if (c.calibration_iters < 1) {
    return bad("calibration_iters", std::to_string(c.calibration_iters), "at least 1");
  }
  if (c.warmup_iters < 0) return bad("warmup_iters", std::to_string(c.warmup_iters), ">= 0");
  if (c.dense_below < 0) return bad("dense_below", std::to_string(c.dense_below), ">= 0");
  if (!is_quant_bits(c.quant_bits)) {
    return bad("quant_bits", std::to_string(c.quant_bits), kQuantBitsAllowed);
  }
  if (c.reply_quant_bits != 0 && !is_quant_bits(c.reply_quant_bits)) {
    return bad("reply_quant_bits", std::to_string(c.reply_quant_bits),
               std::string("0 (quant_bits) or ") + kQuantBitsAllowed);
  }
  if (!(c.momentum >= 0.0 && c.momentum < 1.0)) {
    return bad("momentum", std::to_string(c.momentum), "in [0, 1)");
  }
  CodecRuleInputs in;
  in.momentum_correction = c.momentum > 0.0;
  in.adam_correction = c.adam;
  if (auto p = first_problem(c, in)) {
    return Status::error("compression." + p->key + ": " + p->what);
  }
  if (c.adam) {
    if (c.momentum > 0.0) {
      return bad("adam_correction", "true with momentum_correction",
                 "one worker-side optimizer at a time (Adam has its own first moment)");
    }
    if (!(c.adam_beta1 >= 0.0 && c.adam_beta1 < 1.0 && c.adam_beta2 >= 0.0 && c.adam_beta2 < 1.0 &&
          c.adam_eps > 0.0 && c.adam_workers >= 1)) {
      return bad("adam_correction", "true with beta1 " + std::to_string(c.adam_beta1) +
                                        ", beta2 " + std::to_string(c.adam_beta2) + ", eps " +
                                        std::to_string(c.adam_eps),
                 "betas in [0, 1) and eps > 0");
    }
  }
  if (!(c.adam_residual_cap >= 0.0 && std::isfinite(c.adam_residual_cap))) {
    return bad("adam_residual_cap", std::to_string(c.adam_residual_cap), "finite and >= 0");
  }
  if (c.log_range < 1 || c.log_range > 64) {
    return bad("log_range", std::to_string(c.log_range), "an integer 1..64");
  }
  if (c.recheck_every < 1) return bad("recheck_every", std::to_string(c.recheck_every), ">= 1");
  if (!(c.sample_fraction > 0.0 && c.sample_fraction <= 1.0)) {
    return bad("sample_fraction", std::to_string(c.sample_fraction), "in (0, 1]");
  }
  return Status::ok();
}

}  // namespace psrt::compress
