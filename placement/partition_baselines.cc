// Single device, even layer counts, torchgpipe's balance by time and PipeDream's partitioner:
// contiguous runs of the topological order on the devices in their given order.
#include <algorithm>
#include <limits>
#include <numeric>

#include "placement/baselines.h"
#include "placement/chain_view.h"

namespace psrt::placement {

namespace {

std::vector<uint32_t> in_order(std::size_t k) {
  std::vector<uint32_t> o(k);
  std::iota(o.begin(), o.end(), 0);
  return o;
}

// Min-max linear partition of the chain into at most K runs under `cost(i, j)` (exact DP, the
// recurrence of PipeDream's section 3.1 and the optimum that torchgpipe's block partition aims
// for). Returns the cut positions.
template <typename Cost>
std::vector<std::size_t> min_max_runs(std::size_t n, std::size_t k, Cost cost) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> a(k + 1, std::vector<double>(n + 1, kInf));
  std::vector<std::vector<std::size_t>> from(k + 1, std::vector<std::size_t>(n + 1, 0));
  a[0][0] = 0;
  for (std::size_t s = 1; s <= k; ++s) {
    for (std::size_t j = 0; j <= n; ++j) {
      a[s][j] = a[s - 1][j];  // an empty run
      from[s][j] = j;
      for (std::size_t i = j; i-- > 0;) {
        const double v = std::max(a[s - 1][i], cost(i, j));
        if (v < a[s][j]) {
          a[s][j] = v;
          from[s][j] = i;
        }
      }
    }
  }
  std::vector<std::size_t> cuts(k + 1, n);
  for (std::size_t s = k; s > 0; --s) cuts[s - 1] = from[s][cuts[s]];
  return cuts;
}

}  // namespace

Assignment single_device(const Problem& p) {
  const auto& devs = p.devices.devices;
  const std::vector<uint32_t> zeros(p.model.layers.size(), 0);
  const uint64_t need = memory_use(p.model, zeros, 1, p.setup)[0].total();
  int best = -1;
  for (std::size_t d = 0; d < devs.size(); ++d) {
    if (devs[d].memory_bytes >= need && (best < 0 || devs[d].gflops > devs[best].gflops)) {
      best = static_cast<int>(d);
    }
  }
  if (best < 0) {
    uint64_t most = 0;
    std::string name;
    for (const auto& d : devs) {
      if (d.memory_bytes >= most) most = d.memory_bytes, name = d.name;
    }
    return Status::error("the whole model needs " + std::to_string(need) +
                         " bytes; the largest device '" + name + "' has " + std::to_string(most) +
                         " (" + std::to_string(need - most) + " bytes missing)");
  }
  return std::vector<uint32_t>(p.model.layers.size(), static_cast<uint32_t>(best));
}

Assignment even_layers(const Problem& p) {
  const ChainView chain(p.model);
  const std::size_t n = chain.size(), k = std::min(p.devices.devices.size(), chain.size());
  std::vector<std::size_t> cuts;
  for (std::size_t s = 0; s <= k; ++s) cuts.push_back(s * n / k);
  return chain.assignment(cuts, in_order(k));
}

Assignment torchgpipe_time(const Problem& p) {
  // torchgpipe.balance.balance_by_time: per-layer times, then blockpartition.solve(times,
  // partitions) minimising the largest block's time. Devices are taken as equal.
  const ChainView chain(p.model);
  const auto cuts = min_max_runs(chain.size(), p.devices.devices.size(),
                                 [&](std::size_t i, std::size_t j) { return chain.ms(i, j); });
  return chain.assignment(cuts, in_order(p.devices.devices.size()));
}

Assignment pipedream(const Problem& p) {
  // PipeDream (Narayanan et al., SOSP 2019), section 3.1, one level, no replication: a stage's
  // time is max(its compute, 2 x the activation it receives / bandwidth); minimise the slowest
  // stage. Profiled times are taken as they are (devices equal), memory is not modelled.
  const ChainView chain(p.model);
  const double per_element = 4.0 * p.setup.batch_size / p.devices.slowest().bytes_per_s * 1e3;
  const auto cuts = min_max_runs(chain.size(), p.devices.devices.size(),
                                 [&](std::size_t i, std::size_t j) {
                                   return std::max(chain.ms(i, j),
                                                   2.0 * per_element * chain.cross[i]);
                                 });
  return chain.assignment(cuts, in_order(p.devices.devices.size()));
}

}  // namespace psrt::placement
