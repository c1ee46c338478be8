#include "core/config_compression.h"

#include <string>

namespace psrt {

namespace {

constexpr int64_t kMaxInt = 1ll << 40;

// The codec and its own settings. LACO's defaults (issue 18): the density, every tensor
// compressed and compressed replies make the shipped examples push >= 100x fewer bytes than fp32
// with one `--set compression.codec=laco`.
void parse_codec(const YamlReader& comp, CompressionConfig& c) {
  c.codec = comp.get_choice("codec", "none", {"none", "laco", "signsgd", "graddrop", "topk"});
  const bool laco = c.codec == "laco";
  c.density = comp.get_double("density", laco ? kLacoDensity : c.density, 1e-6, 1.0);
  c.calibration_iters = int(comp.get_int("calibration_iters", c.calibration_iters, 1, 1 << 20));
  c.warmup_iters = int(comp.get_int("warmup_iters", c.warmup_iters, 0, 1 << 20));
  c.dense_below = comp.get_int("dense_below", laco ? 0 : c.dense_below, 0, kMaxInt);
  c.quant_bits = int(comp.get_int("quant_bits", 8, 8, 32));
  if (c.quant_bits != 8 && c.quant_bits != 32) {
    comp.fail("quant_bits", std::to_string(c.quant_bits) + " is not one of: 8, 32");
  }
  c.error_feedback = comp.get_bool("error_feedback", true);
  c.hierarchical = comp.get_bool("hierarchical", true);
  c.compress_replies =
      comp.get_choice("replies", laco ? "compressed" : "dense", {"dense", "compressed"}) ==
      "compressed";
  if (c.compress_replies && c.codec == "none") {
    comp.fail("replies", "compressed needs a codec other than none");
  }
}

// momentum_correction and momentum_masking: the workers apply the SGD momentum.
void parse_momentum_correction(const YamlReader& comp, OptimizerConfig& optimizer,
                               CompressionConfig& c) {
  const bool correction = comp.get_bool("momentum_correction", false);
  c.momentum_masking = comp.get_bool("momentum_masking", false);
  if (c.momentum_masking) {
    if (!correction) comp.fail("momentum_masking", "needs momentum_correction: true");
    if (c.codec != "laco" && c.codec != "graddrop" && c.codec != "topk") {
      comp.fail("momentum_masking",
                "needs a sparsifying codec (laco, graddrop, topk), not " + c.codec);
    }
  }
  if (!correction) return;
  if (c.codec == "none") comp.fail("momentum_correction", "needs a codec other than none");
  if (!c.error_feedback) comp.fail("momentum_correction", "needs error_feedback: true");
  if (optimizer.type != "sgd" || optimizer.momentum == 0) {
    comp.fail("momentum_correction", "needs optimizer sgd with momentum > 0");
  }
  c.momentum = optimizer.momentum;  // the workers apply it ...
  optimizer.momentum = 0;           // ... so the servers must not
}

// adam_correction (on by default with optimizer adam, a codec and error feedback): the workers
// run Adam's moments.
void parse_adam_correction(const YamlReader& comp, const ClusterConfig& cluster,
                           OptimizerConfig& optimizer, CompressionConfig& c) {
  const bool adam_default = optimizer.type == "adam" && c.codec != "none" && c.error_feedback;
  c.adam_global_variance = comp.get_bool("adam_global_variance", true);
  if (!comp.get_bool("adam_correction", adam_default)) return;
  if (optimizer.type != "adam") comp.fail("adam_correction", "needs optimizer adam");
  if (c.codec == "none") comp.fail("adam_correction", "needs a codec other than none");
  if (!c.error_feedback) comp.fail("adam_correction", "needs error_feedback: true");
  c.adam = true;  // the workers run Adam's moments ...
  c.adam_beta1 = optimizer.beta1;
  c.adam_beta2 = optimizer.beta2;
  c.adam_eps = optimizer.eps;
  c.adam_weight_decay = optimizer.weight_decay;
  c.adam_workers = cluster.workers;
  optimizer.type = "sgd";  // ... and the servers apply the mean direction
  optimizer.momentum = 0;
  optimizer.weight_decay = 0;
}

}  // namespace

void parse_compression(const YamlReader& comp, const ClusterConfig& cluster,
                       OptimizerConfig& optimizer, CompressionConfig& c) {
  parse_codec(comp, c);
  parse_momentum_correction(comp, optimizer, c);
  parse_adam_correction(comp, cluster, optimizer, c);
  comp.reject_unknown();
}

}  // namespace psrt
