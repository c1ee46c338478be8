// METIS-like balance-only partitioning, our own (libmetis is not used): k parts whose compute is
// in proportion to the devices' GFLOPS within 3%, with the edge cut (activation elements) made
// small by Fiduccia-Mattheyses-style boundary moves, and nothing else: no memory, no pipeline
// order (a part may hold layers from both sides of another part), no link or push costs. That is
// what METIS's k-way partitioning with vertex weights and target part weights optimises.
#include <algorithm>
#include <numeric>

#include "placement/baselines.h"

namespace psrt::placement {

namespace {

constexpr double kTolerance = 0.03;

struct Parts {
  std::vector<uint32_t> part;
  std::vector<double> weight, target;
};

// Gain in cut activation elements of moving layer l to part `to`.
int64_t move_gain(const ModelDesc& m, const std::vector<std::vector<uint32_t>>& consumers,
                  const std::vector<uint32_t>& part, uint32_t l, uint32_t to) {
  int64_t gain = 0;
  auto edge = [&](uint32_t u, uint32_t v) {  // u's output read by v
    const auto w = static_cast<int64_t>(m.layers[u].activation_elements);
    if (part[u] != part[v]) gain += w;                            // cut now
    const uint32_t pu = u == l ? to : part[u], pv = v == l ? to : part[v];
    if (pu != pv) gain -= w;                                      // cut after the move
  };
  for (uint32_t u : m.layers[l].inputs) edge(u, l);
  for (uint32_t v : consumers[l]) edge(l, v);
  return gain;
}

}  // namespace

Assignment balance_only(const Problem& p) {
  const auto& m = p.model;
  const auto n = static_cast<uint32_t>(m.layers.size());
  const auto k = static_cast<uint32_t>(p.devices.devices.size());
  std::vector<std::vector<uint32_t>> consumers(n);
  for (uint32_t l = 0; l < n; ++l) {
    for (uint32_t u : m.layers[l].inputs) consumers[u].push_back(l);
  }
  std::vector<double> w(n);
  for (uint32_t l = 0; l < n; ++l) w[l] = m.layers[l].forward_ms + m.layers[l].backward_ms;
  const double total = std::accumulate(w.begin(), w.end(), 0.0);
  double gflops = 0;
  for (const auto& d : p.devices.devices) gflops += d.gflops;
  Parts parts;
  parts.part.assign(n, 0);
  parts.weight.assign(k, 0);
  for (const auto& d : p.devices.devices) parts.target.push_back(total * d.gflops / gflops);
  // Initial partition: graph growing along a topological order.
  uint32_t cur = 0;
  for (uint32_t l : topological_order(m, m.name)) {
    if (cur + 1 < k && parts.weight[cur] + w[l] / 2 > parts.target[cur]) ++cur;
    parts.part[l] = cur;
    parts.weight[cur] += w[l];
  }
  // Refinement passes: move a boundary layer to a neighbouring part when that cuts fewer
  // elements and keeps both parts within the tolerance.
  for (int pass = 0; pass < 10; ++pass) {
    bool moved = false;
    for (uint32_t l = 0; l < n; ++l) {
      std::vector<uint32_t> near;
      for (uint32_t u : m.layers[l].inputs) near.push_back(parts.part[u]);
      for (uint32_t v : consumers[l]) near.push_back(parts.part[v]);
      const uint32_t from = parts.part[l];
      for (uint32_t to : near) {
        if (to == from || move_gain(m, consumers, parts.part, l, to) <= 0) continue;
        if (parts.weight[to] + w[l] > (1 + kTolerance) * parts.target[to] ||
            parts.weight[from] - w[l] < (1 - kTolerance) * parts.target[from]) {
          continue;
        }
        parts.part[l] = to;
        parts.weight[from] -= w[l];
        parts.weight[to] += w[l];
        moved = true;
        break;
      }
    }
    if (!moved) break;
  }
  return parts.part;
}

}  // namespace psrt::placement
