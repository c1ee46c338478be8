// The one codec-config type: the job file's `compression:` section and the codecs' own settings
// (compress::CodecConfig names this struct). compress/ parses and validates it
// (compress/config_section.h, compress/codec_config.h); it lives here, below compress/, because
// core's Config composes it. Plain data only: nvcc compiles this header too.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace psrt {

// compression.density's default with codec laco (others: CompressionConfig::density).
inline constexpr double kLacoDensity = 0.0065;
// ... with quant_bits 1 (ternary values, laco's default under Adam correction).
inline constexpr double kLacoTernaryDensity = 0.011;
// compression.adam_residual_cap's default under Adam correction: steps of Adam's direction.
inline constexpr double kAdamResidualCap = 64;

// Gradient compression (compress/README.md has the method). The servers decode and accumulate;
// the parameter replies stay dense unless `compress_replies`.
struct CompressionConfig {
  std::string codec = "none";  // none | laco | signsgd | graddrop | topk
  double density = 0.01;       // fraction of elements sent (laco, graddrop, topk)
  int calibration_iters = 5;   // laco: dense iterations recording |g|/RMS that find alpha
  int warmup_iters = 20;       // laco: hot start, density 1 -> target in exponential steps
  int64_t dense_below = 1024;  // laco: tensors under this many elements go dense (fp32)
  int quant_bits = 8;          // laco: 8 (sign + 7-bit log code), 32 (raw fp32 values), 1 (ternary)
  bool hierarchical = true;    // laco: per-tensor density by size and depth
  bool error_feedback = true;  // residual accumulation (decorator); ignored by none
  // Momentum correction (YAML `momentum_correction: true`): the workers apply the optimizer's
  // SGD momentum before compressing (compress/error_feedback.h); the section parser then moves
  // it here from optimizer.momentum, which becomes 0 (the servers run plain SGD). 0: off.
  double momentum = 0;
  bool momentum_masking = false;  // momentum correction: clear a sent element's momentum (DGC)
  // Adam correction (YAML `adam_correction`, on by default with optimizer adam and a codec): the
  // workers run Adam's moments on their gradient and compress the update direction
  // (compress/error_feedback.h); the section parser copies beta1, beta2, eps here and moves the
  // weight decay (L2, added to the gradient by the workers), and the servers run plain SGD with
  // the same learning rate and schedule. Needs error_feedback; excludes momentum correction.
  bool adam = false;
  double adam_beta1 = 0.9, adam_beta2 = 0.999, adam_eps = 1e-8, adam_weight_decay = 0;
  int adam_workers = 1;  // data-parallel replicas (cluster.workers / partitions), for ...
  bool adam_global_variance = true;   // ... v rescaled from the local batch to the global one
  // laco under Adam correction (YAML `adam_select: gradient`): select by the residual times
  // Adam's denominator (the residual in the gradient's units), send the residual's values.
  bool adam_select_gradient = false;
  // Adam correction (YAML `adam_residual_cap`): each element's residual is clamped to +-this many
  // steps of Adam's direction, so an element that waited long sends at most that much at once.
  // 0: no cap (the default without Adam correction; with it kAdamResidualCap).
  double adam_residual_cap = 0;
  // Servers send each update as the codec's encoding of (new values - what the workers hold),
  // the same payload to every worker; what was not sent stays in that difference.
  bool compress_replies = false;
  // Compressed replies' density (YAML `reply_density`); 0: `density`.
  double reply_density = 0;
  // Compressed replies' laco values (YAML `reply_quant_bits`: 1, 8 or 32); 0: `quant_bits`.
  int reply_quant_bits = 0;

  // Keys the job file sets that this codec and these settings do not read (a warning at start:
  // signSGD's density, top-k's quant_bits changed nothing, silently).
  std::vector<std::string> idle_keys;

  // Settings with no YAML key yet; the defaults are the documented method.
  int log_range = 12;             // laco: log2 dynamic range of the 7-bit code, 1..64
  int recheck_every = 25;         // laco: re-record the |g|/RMS distribution every N iterations
  bool majority_vote = false;     // signsgd: the server takes the sign of the vote sum
  double sample_fraction = 0.01;  // graddrop: fraction of |g| sampled for the threshold
  uint64_t seed = 0x5eed;         // graddrop: sampling

  // The global batch Adam's v is rescaled to, in replicas (1: the local batch).
  int adam_variance_workers() const { return adam_global_variance ? adam_workers : 1; }
};

}  // namespace psrt
