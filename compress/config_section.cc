#include "compress/config_section.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "compress/codec_config.h"

namespace psrt::compress {

namespace {

// The codec and its own settings. LACO's defaults (issue 18): every tensor compressed and
// compressed replies (the density and encoding: read_encoding).
void read_codec(const YamlReader& comp, CompressionConfig& c) {
  c.codec = comp.get_choice("codec", "none", {"none", "laco", "signsgd", "graddrop", "topk"});
  const bool laco = c.codec == "laco";
  c.calibration_iters = int(comp.get_int("calibration_iters", c.calibration_iters, 1, 1 << 20));
  c.warmup_iters = int(comp.get_int("warmup_iters", c.warmup_iters, 0, 1 << 20));
  c.dense_below = comp.get_int("dense_below", laco ? 0 : c.dense_below, 0, kMaxConfigInt);
  c.error_feedback = comp.get_bool("error_feedback", true);
  c.hierarchical = comp.get_bool("hierarchical", true);
  c.compress_replies =
      comp.get_choice("replies", laco ? "compressed" : "dense", {"dense", "compressed"}) ==
      "compressed";
}

// LACO's values and density: under Adam correction ternary values (quant_bits 1) selected by the
// residual in the gradient's units (adam_select: gradient) at kLacoTernaryDensity, with replies
// at `workers` (data-parallel replicas) times that density (the servers' update is the union of
// the pushes of a tensor's holders, one per replica);
// otherwise log8 codes at kLacoDensity, replies at the same density. Both push the shipped
// examples >= 100x fewer bytes than fp32 with one `--set compression.codec=laco` (issue 18).
void read_encoding(const YamlReader& comp, bool adam, int workers, CompressionConfig& c) {
  const bool laco = c.codec == "laco";
  const auto bits = [&](const char* key, int fallback) {
    const int b = int(comp.get_int(key, fallback, fallback == 0 ? 0 : 1, 32));
    if (b != fallback && !is_quant_bits(b)) {
      comp.fail(key, std::to_string(b) + " is not " + kQuantBitsAllowed);
    }
    return b;
  };
  c.quant_bits = bits("quant_bits", laco && adam ? 1 : 8);
  c.reply_quant_bits = bits("reply_quant_bits", 0);
  const double laco_density = c.quant_bits == 1 ? kLacoTernaryDensity : kLacoDensity;
  c.density = comp.get_double("density", laco ? laco_density : c.density, 1e-6, 1.0);
  const bool gradient = laco && adam && c.quant_bits != 8;
  c.adam_select_gradient = comp.get_choice("adam_select", gradient ? "gradient" : "direction",
                                           {"direction", "gradient"}) == "gradient";
  const double cap = adam ? kAdamResidualCap : 0.0;
  c.adam_residual_cap = comp.get_double("adam_residual_cap", cap, 0.0, 1e9);
  const double union_density = std::min(1.0, c.density * std::max(1, workers));
  c.reply_density = comp.get_double("reply_density", laco && adam ? union_density : 0.0, 0.0, 1.0);
}

void check(const YamlReader& comp, const CompressionConfig& c, const CodecRuleInputs& in) {
  if (auto p = first_problem(c, in)) comp.fail(p->key, p->what);
}

// Momentum correction: the workers apply the SGD momentum, so the servers must not. Adam
// correction: the workers run Adam's moments, and the servers apply the mean direction.
void move_optimizer(const CodecRuleInputs& in, int replicas, OptimizerConfig& optimizer,
                    CompressionConfig& c) {
  if (in.momentum_correction) {
    c.momentum = optimizer.momentum;
    optimizer.momentum = 0;
  }
  if (!in.adam_correction) return;
  c.adam = true;
  c.adam_beta1 = optimizer.beta1;
  c.adam_beta2 = optimizer.beta2;
  c.adam_eps = optimizer.eps;
  c.adam_weight_decay = optimizer.weight_decay;
  c.adam_workers = std::max(1, replicas);
  optimizer.type = "sgd";
  optimizer.momentum = 0;
  optimizer.weight_decay = 0;
}

// The keys set in the section that the codec and the settings read do not use.
std::vector<std::string> idle_keys(const YamlReader& comp, const CompressionConfig& c,
                                   bool adam_correction) {
  const bool laco = c.codec == "laco";
  const bool none = c.codec == "none";
  const std::pair<const char*, bool> used[] = {
      {"density", !none && c.codec != "signsgd"},
      {"error_feedback", !none},
      {"calibration_iters", laco},
      {"warmup_iters", laco},
      {"dense_below", laco},
      {"hierarchical", laco},
      {"quant_bits", laco},
      {"reply_density", c.compress_replies},
      {"reply_quant_bits", laco && c.compress_replies},
      {"adam_global_variance", adam_correction},
      {"adam_residual_cap", adam_correction},
      {"adam_select", adam_correction && laco},
  };
  std::vector<std::string> out;
  for (const auto& [key, read] : used) {
    if (!read && comp.has(key)) out.emplace_back(key);
  }
  return out;
}

}  // namespace

void parse_compression_section(const YamlReader& comp, int replicas, OptimizerConfig& optimizer,
                               CompressionConfig& c) {
  // The rules are checked as the keys they need are read, so that of two mistakes the one
  // earlier in the section is named.
  read_codec(comp, c);
  CodecRuleInputs in;
  in.optimizer_type = optimizer.type;
  in.optimizer_momentum = optimizer.momentum;
  check(comp, c, in);
  in.momentum_correction = comp.get_bool("momentum_correction", false);
  c.momentum_masking = comp.get_bool("momentum_masking", false);
  check(comp, c, in);
  // Adam correction is on by default with optimizer adam, a codec and error feedback.
  const bool adam_default = optimizer.type == "adam" && c.codec != "none" && c.error_feedback;
  c.adam_global_variance = comp.get_bool("adam_global_variance", true);
  in.adam_correction = comp.get_bool("adam_correction", adam_default);
  check(comp, c, in);
  read_encoding(comp, in.adam_correction, replicas, c);
  check(comp, c, in);
  c.idle_keys = idle_keys(comp, c, in.adam_correction);
  move_optimizer(in, replicas, optimizer, c);
  comp.reject_unknown();
}

}  // namespace psrt::compress
