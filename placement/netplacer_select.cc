#include "placement/netplacer_select.h"

#include <algorithm>
#include <limits>

namespace psrt::placement {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Scored {
  double t;
  std::vector<uint32_t> assignment;
};

// The pipeline model's estimate of runs, counting estimates against a budget.
struct Price {
  const PipelineModel& model;
  const ChainView& chain;
  std::size_t budget;
  mutable std::size_t spent = 0;
  bool left() const { return spent < budget; }
  double operator()(const Runs& r) const {
    ++spent;
    return model.step_ms(chain.assignment(r.cuts, r.devices));
  }
};

}  // namespace

bool as_runs(const ChainView& chain, const std::vector<uint32_t>& device_of_layer,
             uint32_t device_count, Runs& out) {
  out.cuts.assign(1, 0);
  out.devices.clear();
  std::vector<bool> used(device_count, false);
  for (std::size_t p = 0; p < chain.size(); ++p) {
    const uint32_t d = device_of_layer[chain.order[p]];
    if (!out.devices.empty() && out.devices.back() == d) continue;
    if (used[d]) return false;
    used[d] = true;
    if (p > 0) out.cuts.push_back(p);
    out.devices.push_back(d);
  }
  for (uint32_t d = 0; d < device_count; ++d) {
    if (used[d]) continue;
    out.cuts.push_back(chain.size());
    out.devices.push_back(d);
  }
  out.cuts.push_back(chain.size());
  if (out.devices.empty()) out.cuts.assign(1, chain.size());
  return true;
}

namespace {

// One round of moves of single cuts (each to its best position within kReach), then, when none
// helped, of two neighbouring cuts together (kPairReach each way): a stage's window shifted or
// resized at both ends, which single moves cannot reach from a local optimum.
bool move_cuts(Runs& runs, double& current, const Price& price) {
  constexpr long kReach = 8, kPairReach = 4;
  bool improved = false;
  const auto try_at = [&](std::size_t b, long at) {
    const auto lo = static_cast<long>(runs.cuts[b - 1]), hi = static_cast<long>(runs.cuts[b + 1]);
    return at >= lo && at <= hi;
  };
  for (std::size_t b = 1; b + 1 < runs.cuts.size() && price.left(); ++b) {
    const auto was = static_cast<long>(runs.cuts[b]);
    long best_at = was;
    for (long at = was - kReach; at <= was + kReach && price.left(); ++at) {
      if (at == was || !try_at(b, at)) continue;
      runs.cuts[b] = static_cast<std::size_t>(at);
      const double t = price(runs);
      if (t < current * (1 - 1e-9)) current = t, best_at = at, improved = true;
    }
    runs.cuts[b] = static_cast<std::size_t>(best_at);
  }
  for (std::size_t b = 1; !improved && b + 2 < runs.cuts.size() && price.left(); ++b) {
    const auto was0 = static_cast<long>(runs.cuts[b]), was1 = static_cast<long>(runs.cuts[b + 1]);
    long best0 = was0, best1 = was1;
    for (long d0 = -kPairReach; d0 <= kPairReach && price.left(); ++d0) {
      runs.cuts[b + 1] = static_cast<std::size_t>(was1);
      if (d0 == 0 || !try_at(b, was0 + d0)) continue;
      runs.cuts[b] = static_cast<std::size_t>(was0 + d0);
      for (long d1 = -kPairReach; d1 <= kPairReach && price.left(); ++d1) {
        if (d1 == 0 || !try_at(b + 1, was1 + d1)) continue;
        runs.cuts[b + 1] = static_cast<std::size_t>(was1 + d1);
        const double t = price(runs);
        if (t < current * (1 - 1e-9)) current = t, best0 = was0 + d0, best1 = was1 + d1, improved = true;
      }
    }
    runs.cuts[b] = static_cast<std::size_t>(best0);
    runs.cuts[b + 1] = static_cast<std::size_t>(best1);
  }
  return improved;
}

// Every pair of stages (not both empty) swaps devices when that helps.
bool swap_devices(Runs& runs, double& current, const Price& price) {
  bool improved = false;
  const std::size_t stages = runs.devices.size();
  for (std::size_t a = 0; a < stages && price.left(); ++a) {
    for (std::size_t b = a + 1; b < stages && price.left(); ++b) {
      if (runs.cuts[a] == runs.cuts[a + 1] && runs.cuts[b] == runs.cuts[b + 1]) continue;
      std::swap(runs.devices[a], runs.devices[b]);
      const double t = price(runs);
      if (t < current * (1 - 1e-9)) {
        current = t, improved = true;
      } else {
        std::swap(runs.devices[a], runs.devices[b]);
      }
    }
  }
  return improved;
}

}  // namespace

double polish(const PipelineModel& model, const ChainView& chain, Runs& runs, std::size_t budget) {
  Price price{model, chain, budget};
  double current = price(runs);
  while (price.left()) {
    const bool moved = move_cuts(runs, current, price);
    if (!swap_devices(runs, current, price) && !moved) break;
  }
  return current;
}

std::vector<uint32_t> select_best(const PipelineModel& model, const ChainView& chain,
                                  uint32_t device_count,
                                  std::vector<std::vector<uint32_t>> candidates,
                                  std::size_t refine, std::size_t budget, double& estimate) {
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  std::vector<Scored> scored;
  for (auto& c : candidates) {
    const double t = model.step_ms(c);
    if (t < kInf) scored.push_back({t, std::move(c)});
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const Scored& a, const Scored& b) { return a.t < b.t; });
  estimate = kInf;
  if (scored.empty()) return {};
  Scored best = scored.front();
  std::size_t polished = 0;
  for (const auto& s : scored) {
    if (polished == refine) break;
    Runs runs;
    if (!as_runs(chain, s.assignment, device_count, runs)) continue;
    ++polished;
    const double t = polish(model, chain, runs, budget / std::max<std::size_t>(1, refine));
    if (t < best.t) best = {t, chain.assignment(runs.cuts, runs.devices)};
  }
  estimate = best.t;
  return best.assignment;
}

}  // namespace psrt::placement
