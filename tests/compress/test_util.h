// Seeded inputs and small helpers for the compress tests.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <vector>

#include "compress/codec.h"
#include "compress/codec_config.h"
#include "compress/registry.h"

namespace psrt::compress::testing {

inline std::vector<float> gaussian(size_t n, uint64_t seed, float sigma = 1.0f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

inline std::unique_ptr<Codec> make(const CodecConfig& config) {
  Result<std::unique_ptr<Codec>> r = make_codec(config);
  if (!r) return nullptr;
  return std::move(*r);
}

inline CodecConfig config_for(const char* name, bool error_feedback = true) {
  CodecConfig c;
  c.codec = name;
  c.error_feedback = error_feedback;
  return c;
}

// Chunk [offset, offset + len) of `g` encoded through `state` at `iteration` and decoded again:
// what a server receives. None when encode or decode fails.
inline std::optional<std::vector<float>> encode_chunk(const Codec& codec, CodecState& state,
                                                      std::span<const float> g, size_t offset,
                                                      size_t len, int64_t iteration) {
  const ChunkInput in{.offset = int64_t(offset), .values = g.subspan(offset, len),
                      .iteration = iteration};
  std::vector<uint8_t> payload;
  std::vector<float> sent(len);
  if (!codec.encode(state, in, payload).is_ok() || !codec.decode(payload, sent).is_ok()) {
    return std::nullopt;
  }
  return sent;
}

inline const char* const kAllCodecs[] = {"none", "laco", "signsgd", "graddrop", "topk"};

}  // namespace psrt::compress::testing
