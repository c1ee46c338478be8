#include "compress/codec_config.h"

#include <cmath>
#include <string>

namespace psrt::compress {

namespace {

Status bad(const std::string& key, const std::string& value, const std::string& allowed) {
  return Status::error("compression." + key + " = " + value + ": " + allowed);
}

}  // namespace

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
  if (c.quant_bits != 8 && c.quant_bits != 32) {
    return bad("quant_bits", std::to_string(c.quant_bits), "8 (log codes) or 32 (fp32)");
  }
  if (!(c.momentum >= 0.0 && c.momentum < 1.0)) {
    return bad("momentum", std::to_string(c.momentum), "in [0, 1)");
  }
  if (c.momentum_masking && c.momentum == 0.0) {
    return bad("momentum_masking", "true", "needs momentum_correction");
  }
  if (c.momentum > 0.0) {
    if (c.codec == "none") {
      return bad("momentum_correction", "true with codec none",
                 "needs a codec (with none the servers' momentum is the same thing)");
    }
    if (c.momentum_masking && c.codec != "laco" && c.codec != "graddrop" && c.codec != "topk") {
      return bad("momentum_masking", "true with codec " + c.codec,
                 "needs a sparsifying codec (laco, graddrop, topk): the momentum of every sent "
                 "element is cleared, and a dense codec sends them all");
    }
    if (!c.error_feedback) {
      return bad("momentum_correction", "true with error_feedback false",
                 "needs error_feedback (the unsent velocity accumulates in the residual)");
    }
  }
  if (c.adam) {
    if (c.codec == "none") return bad("adam_correction", "true with codec none", "needs a codec");
    if (!c.error_feedback) {
      return bad("adam_correction", "true with error_feedback false",
                 "needs error_feedback (the unsent direction accumulates in the residual)");
    }
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
