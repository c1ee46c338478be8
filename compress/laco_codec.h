// LACO: layer-adaptive threshold (LADS) with alpha calibrated on the first dense iterations, a hot
// start, a hierarchical per-layer density, and 8-bit log quantization. See README.md.
// Use it under ErrorFeedback (make_codec does when error_feedback is set): unsent elements stay in
// the residual.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "compress/codec.h"
#include "compress/codec_config.h"
#include "compress/lads.h"
#include "compress/log_quant.h"

namespace psrt::compress {

// A tensor's LACO state (defined in laco_codec.cc): its |g| / RMS histogram, alpha's feedback
// correction and counters. make_state() makes one; LacoCodec::laco_state() finds it.
class LacoState;

// What LACO does with a chunk at an iteration, known before its values are looked at.
struct LacoPlan {
  bool dense = false;   // sent as fp32, whole: a tensor under dense_below, or calibration
  bool record = false;  // record the chunk's |g| / RMS histogram first: calibration or re-check
};

class LacoCodec final : public Codec {
 public:
  explicit LacoCodec(const CodecConfig& config);

  CodecId id() const override { return CodecId::kLaco; }
  std::string_view name() const override { return "laco"; }
  std::unique_ptr<CodecState> make_state(const TensorInfo& info) const override;
  Status encode(CodecState& state, const ChunkInput& chunk,
                std::vector<uint8_t>& payload) const override;
  Status decode_accumulate(std::span<const uint8_t> payload, std::span<float> out,
                           float weight = 1.0f) const override;
  Status subtract_sent(const CodecState& state, std::span<const uint8_t> payload,
                       std::span<float> residual) const override;
  EncodeStats stats(const CodecState& state) const override;
  void save_state(const CodecState& state, ByteWriter& out) const override;
  Status load_state(CodecState& state, ByteReader& in) const override;

  // The alpha a state currently uses at `iteration` (0 during calibration and for dense tensors).
  double alpha(const CodecState& state, int64_t iteration) const;
  const CodecConfig& config() const { return config_; }
  const LogCodebooks& codebooks() const { return books_; }

  // The steps encode() takes for a chunk, public so that the CUDA path (cuda/device_laco.h)
  // makes the same decisions on the same state instead of repeating them. encode() is:
  //   p = plan(); if (p.record) record(values, moments);
  //   if (p.dense) { write_dense_fp32(values); account_dense(); }
  //   else { params = lads_params(); lads_encode(values, params); account_sparse(kept); }
  // Each step takes the values the chunk's payload is made from (the corrected gradient under
  // error feedback).

  // The LACO state of a state made by make_state(); null for one made by another codec.
  static LacoState* laco_state(CodecState& state);
  LacoPlan plan(const LacoState& state, int64_t iteration) const;
  // Records the chunk's |g| / RMS into the tensor's histogram. At a re-check the first chunk of
  // the iteration clears the histogram and alpha's correction. Error: a NaN or an infinity during
  // calibration (at a re-check such a chunk is not recorded; lads_encode then rejects it).
  // `moments`: chunk_moments(values) if the caller has them (ChunkInput::moments), else null.
  Status record(LacoState& state, int64_t iteration, std::span<const float> values,
                const ChunkMoments* moments = nullptr) const;
  // LADS settings for a sparse chunk, with the alpha of the state as it is now (after record).
  LadsParams lads_params(const LacoState& state, int64_t iteration) const;
  // Counts a dense chunk of n elements and its payload in the stats.
  void account_dense(LacoState& state, size_t n, size_t payload_bytes) const;
  // Counts a sparse chunk, then corrects alpha by how many elements it kept against the density.
  void account_sparse(LacoState& state, int64_t iteration, const LadsParams& params, size_t n,
                      size_t kept, size_t payload_bytes) const;

 private:
  CodecConfig config_;
  LogCodebooks books_;
};

}  // namespace psrt::compress
