// Typed compression settings, mapped from the YAML `compression:` section.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"

namespace psrt::compress {

struct CodecConfig {
  std::string codec = "none";   // none | laco | signsgd | graddrop | topk
  double density = 0.01;        // target fraction of elements sent (laco, graddrop, topk)
  int calibration_iters = 5;    // laco: dense iterations recording |g|/RMS
  int warmup_iters = 20;        // laco: hot start, density 1 -> target in exponential steps
  int64_t dense_below = 1024;   // laco: tensors under this many elements go dense (fp32)
  int quant_bits = 8;           // laco: 8 (sign + 7-bit log code) or 32 (raw fp32 values)
  bool error_feedback = true;   // residual accumulation (decorator); ignored by none
  double momentum = 0;          // momentum correction on the worker (0: off; any codec but
                                // none; needs error_feedback)
  bool momentum_masking = false;  // momentum correction: clear a sent element's momentum (laco,
                                  // graddrop, topk)
  // Adam correction on the worker (error_feedback.h): the workers run Adam's moments on their own
  // gradient and compress the update direction; the servers then run plain SGD. Needs
  // error_feedback; excludes momentum correction.
  bool adam = false;
  double adam_beta1 = 0.9;
  double adam_beta2 = 0.999;
  double adam_eps = 1e-8;
  int adam_workers = 1;  // > 1: v rescaled to the global batch of this many workers

  // Settings with no YAML key yet; the defaults are the documented method.
  int log_range = 12;           // laco: log2 dynamic range of the 7-bit code, 1..64
  int recheck_every = 25;       // laco: re-record the |g|/RMS distribution every N iterations
  bool hierarchical = true;     // laco: per-layer density by size and depth
  bool majority_vote = false;   // signsgd: the server takes the sign of the vote sum
  double sample_fraction = 0.01;  // graddrop: fraction of |g| sampled for the threshold
  uint64_t seed = 0x5eed;       // graddrop: sampling
};

// Names the key, the value and what is allowed.
Status validate(const CodecConfig& config);

}  // namespace psrt::compress
