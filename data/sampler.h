// Deterministic, rank-sharded mini-batch sampling. Every process that builds a BatchSampler with
// the same (n, world, batch, seed) sees the same epoch permutations, so the ranks' shards are
// disjoint.
#pragma once

#include <cstdint>
#include <vector>

namespace psrt::data {

class BatchSampler {
 public:
  // Epoch e's order is a Fisher-Yates shuffle of 0..n-1 driven by a splitmix64 stream seeded from
  // (seed, e). Rank r takes positions [r * per, (r + 1) * per) with per = n / world; batch b of the
  // epoch is positions [b * batch, (b + 1) * batch) of that shard. Throws psrt::ConfigError unless
  // 0 <= rank < world, batch >= 1 and n / world >= batch.
  BatchSampler(int n, int rank, int world, int batch, uint64_t seed);

  int iterations_per_epoch() const { return iterations_; }  // (n / world) / batch, >= 1
  int per_rank() const { return per_; }                     // n / world
  // Indices (into the dataset) for global iteration t; epoch = t / iterations_per_epoch().
  // Caches the current epoch's permutation: not thread-safe, one sampler per thread.
  std::vector<int> batch(uint64_t iteration) const;
  // The full permutation of 0..n-1 for an epoch (the same in every process).
  std::vector<int> epoch_order(uint64_t epoch) const;

 private:
  int n_, rank_, batch_;
  uint64_t seed_;
  int per_ = 0, iterations_ = 0;
  mutable uint64_t cached_epoch_ = 0;
  mutable std::vector<int> cached_order_;
};

}  // namespace psrt::data
