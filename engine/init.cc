#include "engine/init.h"

#include <cmath>
#include <numbers>

namespace psrt::engine {

uint64_t mix_seed(uint64_t seed, uint64_t stream) {
  uint64_t z = seed + 0x9E3779B97F4A7C15ULL * (stream + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

double InitRng::uniform() {
  return static_cast<double>(gen_() >> 11) * 0x1.0p-53;
}

double InitRng::normal() {
  const double u1 = 1.0 - uniform();  // (0, 1]: log is finite
  const double u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

void fill_he_normal(std::span<float> w, std::size_t fan_in, uint64_t seed) {
  InitRng rng(seed);
  const double stddev = std::sqrt(2.0 / static_cast<double>(fan_in));
  for (float& v : w) v = static_cast<float>(stddev * rng.normal());
}

void fill_xavier_uniform(std::span<float> w, std::size_t fan_in, std::size_t fan_out,
                         uint64_t seed) {
  InitRng rng(seed);
  const double a = std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
  for (float& v : w) v = static_cast<float>(a * (2.0 * rng.uniform() - 1.0));
}

}  // namespace psrt::engine
