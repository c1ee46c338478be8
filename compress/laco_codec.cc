#include "compress/laco_codec.h"

#include <algorithm>
#include <cmath>

#include "compress/codec_util.h"
#include "compress/cpu_kernels.h"
#include "compress/density_schedule.h"
#include "compress/lads.h"
#include "compress/payload_decoder.h"
#include "compress/payload_writer.h"
#include "compress/ratio_histogram.h"

namespace psrt::compress {

namespace {

class LacoState final : public BasicState {
 public:
  using BasicState::BasicState;
  RatioHistogram histogram_;
  int64_t recorded_iteration_ = -1;  // the re-check iteration the histogram holds
  double correction_ = 1.0;          // feedback on alpha since the last re-check
  LadsScratch scratch_;
};

// Whether the distribution is re-recorded at this iteration: each warm-up stage's first
// iteration, then every recheck_every iterations after warm-up.
constexpr double kGain = 0.25;  // feedback gain, see encode()

bool is_recheck(const CodecConfig& c, int64_t t) {
  const int stage = warmup_stage(c, t);
  if (stage < 0) return false;
  const int64_t after = t - c.calibration_iters - c.warmup_iters;
  if (after >= 0) return after % c.recheck_every == 0;
  return warmup_stage(c, t - 1) != stage;
}

}  // namespace

LacoCodec::LacoCodec(const CodecConfig& config) : config_(config) {}

std::unique_ptr<CodecState> LacoCodec::make_state(const TensorInfo& info) const {
  return std::make_unique<LacoState>(info);
}

double LacoCodec::alpha(const CodecState& state, int64_t iteration) const {
  const auto* s = dynamic_cast<const LacoState*>(&state);
  if (s == nullptr || s->info_.num_elements < config_.dense_below) return 0.0;
  if (iteration < config_.calibration_iters) return 0.0;
  return s->histogram_.alpha_for(layer_density(config_, s->info_, iteration)) * s->correction_;
}

Status LacoCodec::encode(CodecState& state, const ChunkInput& chunk,
                         std::vector<uint8_t>& payload) const {
  Result<LacoState*> checked = checked_state<LacoState>(state, chunk, name());
  if (!checked) return checked.status();
  LacoState& s = **checked;
  const std::span<const float> g = chunk.values;

  const bool dense_tensor = s.info_.num_elements < config_.dense_below;
  const bool calibrating = chunk.iteration < config_.calibration_iters;
  if (dense_tensor || calibrating) {
    if (calibrating && !dense_tensor) {
      const ChunkMoments m = chunk_moments(g);
      if (!m.finite) return Status::error("laco: gradient chunk holds a NaN or an infinity");
      if (m.sum_squares > 0) {
        s.histogram_.add(g, static_cast<float>(1.0 / std::sqrt(m.sum_squares / g.size())));
      }
    }
    write_dense_fp32(id(), g, payload);
    count(s, g.size(), g.size(), payload.size());
    return Status::ok();
  }

  if (is_recheck(config_, chunk.iteration)) {
    const ChunkMoments m = chunk_moments(g);
    if (m.finite && m.sum_squares > 0) {
      if (s.recorded_iteration_ != chunk.iteration) {
        s.histogram_.clear();
        s.correction_ = 1.0;
        s.recorded_iteration_ = chunk.iteration;
      }
      s.histogram_.add(g, static_cast<float>(1.0 / std::sqrt(m.sum_squares / g.size())));
    }
  }
  LadsParams params;
  params.alpha = static_cast<float>(alpha(s, chunk.iteration));
  params.quant_bits = config_.quant_bits;
  params.log_range = config_.log_range;
  Result<LadsResult> r =
      lads_encode(g, params, books_.get(config_.log_range), s.scratch_, payload);
  if (!r) return r.status();
  count(s, g.size(), r->kept, payload.size());

  // Feedback between re-checks: under error feedback the residual reshapes the distribution, so
  // scale alpha by (kept / expected)^(kGain / (1 + alpha^2)). 1 / (1 + alpha^2) inverts a Gaussian
  // tail's log-log slope at alpha; kGain = 0.25 damps it, since the residual reacts to alpha
  // (a lower alpha empties it, and the next iteration keeps fewer): a full step oscillates.
  const double expected = layer_density(config_, s.info_, chunk.iteration) * static_cast<double>(g.size());
  if (expected >= 1.0 && params.alpha > 0.0f) {
    const double ratio = std::max(0.5, static_cast<double>(r->kept)) / expected;
    const double a = params.alpha;
    s.correction_ = std::clamp(s.correction_ * std::pow(ratio, kGain / (1.0 + a * a)), 0.25, 4.0);
  }
  return Status::ok();
}

Status LacoCodec::decode_accumulate(std::span<const uint8_t> payload, std::span<float> out,
                                    float weight) const {
  return accumulate_payload(payload, out, weight,
                            DecodeOptions{.expect = id(), .codebooks = &books_});
}

EncodeStats LacoCodec::stats(const CodecState& state) const { return basic_stats(state); }

}  // namespace psrt::compress
