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
        if (t < current * (1 - 1e-9))
          current = t, best0 = was0 + d0, best1 = was1 + d1, improved = true;
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

namespace {

// The devices of a layer's inputs and consumers other than its own.
void neighbour_devices(const ModelDesc& m, const std::vector<std::vector<uint32_t>>& consumers,
                       const std::vector<uint32_t>& a, uint32_t l, std::vector<uint32_t>& near) {
  near.clear();
  for (uint32_t u : m.layers[l].inputs) near.push_back(a[u]);
  for (uint32_t v : consumers[l]) near.push_back(a[v]);
  std::sort(near.begin(), near.end());
  near.erase(std::unique(near.begin(), near.end()), near.end());
  near.erase(std::remove(near.begin(), near.end(), a[l]), near.end());
}

// One Fiduccia-Mattheyses pass: up to kSteps times, the best move of an unlocked layer to a
// neighbour's device is made even when it raises the price, and the layer is locked; the pass
// keeps the prefix of moves with the lowest price (so a move that only pays after another one
// is found). Returns the price after the kept prefix.
double fm_pass(const PipelineModel& model, const ModelDesc& m,
               const std::vector<std::vector<uint32_t>>& consumers, std::vector<uint32_t>& a,
               double current, std::size_t& left) {
  constexpr std::size_t kSteps = 16;
  std::vector<bool> locked(a.size(), false);
  std::vector<std::pair<uint32_t, uint32_t>> moves;  // (layer, its device before)
  std::vector<uint32_t> near;
  double best = current;
  std::size_t keep = 0;
  for (std::size_t step = 0; step < kSteps && left > 0; ++step) {
    double pick = std::numeric_limits<double>::infinity();
    uint32_t pick_l = 0, pick_to = 0;
    for (uint32_t l = 0; l < a.size() && left > 0; ++l) {
      if (locked[l]) continue;
      neighbour_devices(m, consumers, a, l, near);
      const uint32_t from = a[l];
      for (uint32_t to : near) {
        if (left == 0) break;
        --left;
        a[l] = to;
        const double t = model.step_ms(a);
        a[l] = from;
        if (t < pick) pick = t, pick_l = l, pick_to = to;
      }
    }
    if (pick == kInf) break;
    moves.emplace_back(pick_l, a[pick_l]);
    a[pick_l] = pick_to;
    locked[pick_l] = true;
    if (pick < best * (1 - 1e-9)) best = pick, keep = moves.size();
  }
  while (moves.size() > keep) {
    a[moves.back().first] = moves.back().second;
    moves.pop_back();
  }
  return best;
}

}  // namespace

double move_layers(const PipelineModel& model, const ModelDesc& m, std::vector<uint32_t>& a,
                   double current, std::size_t budget) {
  std::vector<std::vector<uint32_t>> consumers(m.layers.size());
  for (uint32_t l = 0; l < m.layers.size(); ++l) {
    for (uint32_t u : m.layers[l].inputs) consumers[u].push_back(l);
  }
  std::size_t left = budget;
  while (left > 0) {
    const double t = fm_pass(model, m, consumers, a, current, left);
    if (!(t < current * (1 - 1e-9))) break;
    current = t;
  }
  return current;
}

std::vector<uint32_t> select_best(const PipelineModel& model, const ModelDesc& m,
                                  const ChainView& chain, uint32_t device_count,
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
    const double t = polish(model, chain, runs, budget / 2 / refine);
    if (t < best.t) best = {t, chain.assignment(runs.cuts, runs.devices)};
  }
  best.t = move_layers(model, m, best.assignment, best.t, budget / 2);
  estimate = best.t;
  return best.assignment;
}

}  // namespace psrt::placement
