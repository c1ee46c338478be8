// Seeded inputs and small helpers for the compress tests.
#pragma once

#include <cstdint>
#include <memory>
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

inline const char* const kAllCodecs[] = {"none", "laco", "signsgd", "graddrop", "topk"};

}  // namespace psrt::compress::testing
