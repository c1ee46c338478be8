// Seeded, library-independent random initialisation. std::mt19937_64's output sequence is fixed by
// the standard; the uniform and normal transforms are our own, so values do not depend on the
// standard library's distribution implementations.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <span>

namespace psrt::engine {

// A well-mixed seed for stream `stream` of `seed` (splitmix64 finaliser).
uint64_t mix_seed(uint64_t seed, uint64_t stream);

class InitRng {
 public:
  explicit InitRng(uint64_t seed) : gen_(seed) {}
  double uniform();  // [0, 1), 53 random bits
  double normal();   // standard normal, Box-Muller

 private:
  std::mt19937_64 gen_;
};

// Kaiming/He normal (fan_in mode, gain sqrt(2) for ReLU): N(0, 2 / fan_in).
void fill_he_normal(std::span<float> w, std::size_t fan_in, uint64_t seed);
// Xavier/Glorot uniform: U(-a, a) with a = sqrt(6 / (fan_in + fan_out)).
void fill_xavier_uniform(std::span<float> w, std::size_t fan_in, std::size_t fan_out,
                         uint64_t seed);

}  // namespace psrt::engine
