#include "compress/laco_codec.h"

#include <algorithm>
#include <cmath>

#include "compress/codec_util.h"
#include "compress/cpu_kernels.h"
#include "compress/density_schedule.h"
#include "compress/payload_decoder.h"
#include "compress/payload_writer.h"
#include "compress/ratio_histogram.h"

namespace psrt::compress {

// Declared in the header (opaque there), so the CUDA path can hold one without seeing inside.
class LacoState final : public BasicState {
 public:
  using BasicState::BasicState;
  RatioHistogram histogram_;
  int64_t recorded_iteration_ = -1;  // the re-check iteration the histogram holds
  double correction_ = 1.0;          // feedback on alpha since the last re-check
  LadsScratch scratch_;
  // The last encode, for subtract_sent: log8 codes in scratch_ with this scale over a chunk of
  // this length; false after a dense or fp32 encode (subtract_sent then parses the payload).
  bool last_log8_ = false;
  float last_scale_ = 0;
  size_t last_length_ = 0;
};

namespace {

constexpr double kGain = 0.25;  // feedback gain, see account_sparse()

// Whether the distribution is re-recorded at this iteration: each warm-up stage's first
// iteration, then every recheck_every iterations after warm-up.
bool is_recheck(const CodecConfig& c, int64_t t) {
  const int stage = warmup_stage(c, t);
  if (stage < 0) return false;
  const int64_t after = t - c.calibration_iters - c.warmup_iters;
  if (after >= 0) return after % c.recheck_every == 0;
  return warmup_stage(c, t - 1) != stage;
}

bool is_dense_tensor(const CodecConfig& c, const LacoState& s) {
  return s.info_.num_elements < c.dense_below;
}

}  // namespace

LacoCodec::LacoCodec(const CodecConfig& config) : config_(config) {}

std::unique_ptr<CodecState> LacoCodec::make_state(const TensorInfo& info) const {
  return std::make_unique<LacoState>(info);
}

LacoState* LacoCodec::laco_state(CodecState& state) {
  return dynamic_cast<LacoState*>(&state);
}

double LacoCodec::alpha(const CodecState& state, int64_t iteration) const {
  const auto* s = dynamic_cast<const LacoState*>(&state);
  if (s == nullptr || is_dense_tensor(config_, *s)) return 0.0;
  if (iteration < config_.calibration_iters) return 0.0;
  return s->histogram_.alpha_for(layer_density(config_, s->info_, iteration)) * s->correction_;
}

LacoPlan LacoCodec::plan(const LacoState& state, int64_t iteration) const {
  if (is_dense_tensor(config_, state)) return {.dense = true, .record = false};
  if (iteration < config_.calibration_iters) return {.dense = true, .record = true};
  return {.dense = false, .record = is_recheck(config_, iteration)};
}

Status LacoCodec::record(LacoState& s, int64_t iteration, std::span<const float> values,
                         const ChunkMoments* moments) const {
  const ChunkMoments m = moments != nullptr ? *moments : chunk_moments(values);
  if (iteration < config_.calibration_iters) {
    if (!m.finite) return Status::error("laco: gradient chunk holds a NaN or an infinity");
  } else {
    if (!m.finite) return Status::ok();  // lads_encode reports it
    if (m.sum_squares > 0 && s.recorded_iteration_ != iteration) {
      s.histogram_.clear();
      s.correction_ = 1.0;
      s.recorded_iteration_ = iteration;
    }
  }
  if (m.sum_squares > 0) {
    s.histogram_.add(values, static_cast<float>(1.0 / std::sqrt(m.sum_squares / values.size())));
  }
  return Status::ok();
}

LadsParams LacoCodec::lads_params(const LacoState& s, int64_t iteration) const {
  LadsParams params;
  params.alpha = static_cast<float>(alpha(s, iteration));
  params.quant_bits = config_.quant_bits;
  params.log_range = config_.log_range;
  return params;
}

void LacoCodec::account_dense(LacoState& s, size_t n, size_t payload_bytes) const {
  count(s, n, n, payload_bytes);
}

void LacoCodec::account_sparse(LacoState& s, int64_t iteration, const LadsParams& params, size_t n,
                               size_t kept, size_t payload_bytes) const {
  count(s, n, kept, payload_bytes);
  // Feedback between re-checks: under error feedback the residual reshapes the distribution, so
  // scale alpha by (kept / expected)^(kGain / (1 + alpha^2)). 1 / (1 + alpha^2) inverts a Gaussian
  // tail's log-log slope at alpha; kGain = 0.25 damps it, since the residual reacts to alpha
  // (a lower alpha empties it, and the next iteration keeps fewer): a full step oscillates.
  const double expected = layer_density(config_, s.info_, iteration) * static_cast<double>(n);
  if (expected >= 1.0 && params.alpha > 0.0f) {
    const double ratio = std::max(0.5, static_cast<double>(kept)) / expected;
    const double a = params.alpha;
    s.correction_ = std::clamp(s.correction_ * std::pow(ratio, kGain / (1.0 + a * a)), 0.25, 4.0);
  }
}

Status LacoCodec::encode(CodecState& state, const ChunkInput& chunk,
                         std::vector<uint8_t>& payload) const {
  Result<LacoState*> checked = checked_state<LacoState>(state, chunk, name());
  if (!checked) return checked.status();
  LacoState& s = **checked;
  const std::span<const float> g = chunk.values;
  if (!chunk.select.empty() && chunk.select.size() != g.size()) {
    return Status::error("laco: selection key and values differ in length");
  }
  // What the threshold applies to: the selection key if the caller gives one, else the values.
  const std::span<const float> key = chunk.select.empty() ? g : chunk.select;

  const LacoPlan p = plan(s, chunk.iteration);
  s.last_log8_ = false;
  if (p.record) {
    PSRT_RETURN_IF_ERROR(record(s, chunk.iteration, key, chunk.moments));
  }
  if (p.dense) {
    write_dense_fp32(id(), g, payload);
    account_dense(s, g.size(), payload.size());
    return Status::ok();
  }
  const LadsParams params = lads_params(s, chunk.iteration);
  Result<LadsResult> r = lads_encode(g, params, books_.get(config_.log_range), s.scratch_, payload,
                                     chunk.moments, chunk.select);
  if (!r) return r.status();
  account_sparse(s, chunk.iteration, params, g.size(), r->kept, payload.size());
  s.last_log8_ = params.quant_bits == 8;
  s.last_scale_ = r->scale;
  s.last_length_ = g.size();
  return Status::ok();
}

Status LacoCodec::subtract_sent(const CodecState& state, std::span<const uint8_t> payload,
                                std::span<float> residual) const {
  const auto* s = dynamic_cast<const LacoState*>(&state);
  if (s == nullptr || !s->last_log8_ || residual.size() != s->last_length_) {
    return Codec::subtract_sent(state, payload, residual);
  }
  // What accumulate_payload computes for this payload with weight -1, from the encode's own
  // indices and codes (no varint decoding, no validation of bytes this process just wrote).
  const LogCodebook& book = books_.get(config_.log_range);
  const std::vector<uint32_t>& idx = s->scratch_.indices;
  const std::vector<uint8_t>& codes = s->scratch_.codes;
  for (size_t j = 0; j < idx.size(); ++j) {
    residual[idx[j]] += -1.0f * book.decode(codes[j], s->last_scale_);
  }
  return Status::ok();
}

Status LacoCodec::decode_accumulate(std::span<const uint8_t> payload, std::span<float> out,
                                    float weight) const {
  return accumulate_payload(payload, out, weight,
                            DecodeOptions{.expect = id(), .codebooks = &books_});
}

EncodeStats LacoCodec::stats(const CodecState& state) const { return basic_stats(state); }

void LacoCodec::save_state(const CodecState& state, ByteWriter& out) const {
  const auto& s = dynamic_cast<const LacoState&>(state);
  s.histogram_.save(out);
  out.put<int64_t>(s.recorded_iteration_);
  out.put<double>(s.correction_);
}

Status LacoCodec::load_state(CodecState& state, ByteReader& in) const {
  auto* s = dynamic_cast<LacoState*>(&state);
  if (s == nullptr) return Status::error("laco: state made by another codec");
  const bool ok = s->histogram_.load(in);
  s->recorded_iteration_ = in.get<int64_t>();
  s->correction_ = in.get<double>();
  if (!ok || in.failed()) return Status::error("laco: the saved calibration is truncated");
  return Status::ok();
}

}  // namespace psrt::compress
