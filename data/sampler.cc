#include "data/sampler.h"

#include <numeric>
#include <string>
#include <utility>

#include "core/status.h"

namespace psrt::data {
namespace {

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, bound], unbiased (rejection of the incomplete last block).
  uint64_t below_or_equal(uint64_t bound) {
    const uint64_t range = bound + 1;
    if (range == 0) return next();
    const uint64_t limit = ~uint64_t{0} - (~uint64_t{0} % range + 1) % range;
    uint64_t x = next();
    while (x > limit) x = next();
    return x % range;
  }

 private:
  uint64_t state_;
};

}  // namespace

BatchSampler::BatchSampler(int n, int rank, int world, int batch, uint64_t seed)
    : n_(n), rank_(rank), batch_(batch), seed_(seed) {
  const std::string args = "BatchSampler(n=" + std::to_string(n) +
                           ", rank=" + std::to_string(rank) + ", world=" + std::to_string(world) +
                           ", batch=" + std::to_string(batch) + ")";
  if (n < 1 || world < 1 || rank < 0 || rank >= world || batch < 1) {
    throw ConfigError(args + ": need n >= 1, world >= 1, 0 <= rank < world and batch >= 1");
  }
  per_ = n / world;
  if (per_ < batch) {
    throw ConfigError(args + ": each rank gets n / world = " + std::to_string(per_) +
                      " samples, fewer than one batch");
  }
  iterations_ = per_ / batch;
}

std::vector<int> BatchSampler::epoch_order(uint64_t epoch) const {
  std::vector<int> order(static_cast<std::size_t>(n_));
  std::iota(order.begin(), order.end(), 0);
  SplitMix64 rng(SplitMix64(SplitMix64(seed_).next() ^ epoch).next());
  for (std::size_t i = order.size() - 1; i > 0; --i) {
    const auto j = static_cast<std::size_t>(rng.below_or_equal(i));
    std::swap(order[i], order[j]);
  }
  return order;
}

std::vector<int> BatchSampler::batch(uint64_t iteration) const {
  const uint64_t epoch = iteration / static_cast<uint64_t>(iterations_);
  const auto b = static_cast<std::size_t>(iteration % static_cast<uint64_t>(iterations_));
  if (cached_order_.empty() || cached_epoch_ != epoch) {
    cached_order_ = epoch_order(epoch);
    cached_epoch_ = epoch;
  }
  const std::size_t begin = static_cast<std::size_t>(rank_) * static_cast<std::size_t>(per_) +
                            b * static_cast<std::size_t>(batch_);
  const auto first = cached_order_.begin() + static_cast<std::ptrdiff_t>(begin);
  return std::vector<int>(first, first + batch_);
}

}  // namespace psrt::data
