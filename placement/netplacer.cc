#include "placement/netplacer.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "placement/baselines.h"
#include "placement/chain_view.h"
#include "placement/cost_model.h"
#include "placement/netplacer_select.h"
#include "placement/pipeline_model.h"

namespace psrt::placement {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr std::size_t kBaselineCandidatesUpTo = 2000;  // layers
constexpr std::size_t kPolished = 6;                   // candidates refined under the model
constexpr std::size_t kEstimateBudget = 1000000;       // estimates x layers, all polishing

struct Split {
  double value = kInf;
  std::vector<std::size_t> cuts;  // stage s = [cuts[s], cuts[s + 1]); stage s on order[s]
};

// Walks parent pointers back from (K, n).
std::vector<std::size_t> unwind(const std::vector<std::vector<uint32_t>>& parent, std::size_t n) {
  std::vector<std::size_t> cuts(parent.size(), 0);
  cuts.back() = n;
  for (std::size_t k = parent.size() - 1; k > 0; --k) cuts[k - 1] = parent[k][cuts[k]];
  return cuts;
}

// The DP over the chain shared by both phases: stage k (on order[k]) takes [i, j), possibly
// empty; best[k][j] = min over i of value(best[k-1][i], stage(i, j)). The scan of i stops once
// stop(compute(i, j), best so far) says no further i can help (compute only grows leftwards), or
// parameters and activations alone no longer fit. O(K n^2) in the worst case.
template <typename Value, typename Stop>
Split chain_dp(const CostModel& cost, const std::vector<uint32_t>& order, std::size_t n,
               Value value, Stop stop) {
  std::vector<double> prev(n + 1, kInf), cur(n + 1);
  prev[0] = 0;
  std::vector<std::vector<uint32_t>> parent(order.size() + 1, std::vector<uint32_t>(n + 1, 0));
  for (std::size_t k = 1; k <= order.size(); ++k) {
    const uint32_t d = order[k - 1];
    for (std::size_t j = 0; j <= n; ++j) {
      double best = prev[j];  // empty stage
      uint32_t from = static_cast<uint32_t>(j);
      for (std::size_t i = j; i-- > 0;) {
        if (stop(cost.compute(i, j, d), best) || !cost.static_fits(i, j, d)) break;
        if (prev[i] >= best) continue;
        const auto st = cost.stage(i, j, d);
        const double v = value(prev[i], st);
        if (v < best && cost.fits(st, d)) {
          best = v;
          from = static_cast<uint32_t>(i);
        }
      }
      cur[j] = best;
      parent[k][j] = from;
    }
    std::swap(prev, cur);
  }
  return {prev[n], prev[n] < kInf ? unwind(parent, n) : std::vector<std::size_t>{}};
}

// Phase 1: the least possible bottleneck max_s load(s), every stage within memory. Searched
// under a cap that doubles from 1.5 x the perfectly balanced compute: a run whose compute alone
// reaches the cap is never scanned, so the scan of i covers about n / K positions instead of n.
// The result under a cap is exact whenever it is below the cap; the last try has no cap.
Split min_bottleneck(const CostModel& cost, const ChainView& chain,
                     const std::vector<uint32_t>& order) {
  const std::size_t n = chain.size();
  double speed = 0;  // devices' total speed relative to the profile's
  for (uint32_t d : order) speed += chain.ms(0, n) / std::max(1e-300, cost.compute(0, n, d));
  const double balanced = chain.ms(0, n) / std::max(1e-300, speed);
  const auto max_load = [](double before, const CostModel::Stage& st) {
    return std::max(before, st.load());
  };
  for (double cap = 1.5 * balanced; cap < chain.ms(0, n) * 4 && cap > 0; cap *= 2) {
    Split s = chain_dp(cost, order, n, max_load, [cap](double compute, double best) {
      return compute >= std::min(best, cap);
    });
    if (s.value < cap) return s;
  }
  return chain_dp(cost, order, n, max_load,
                  [](double compute, double best) { return compute >= best; });
}

// Phase 2: with every stage's load at most `limit`, the least sum of compute + communication +
// hop latency (so the fewest bytes and hops cut among the balanced splits).
Split min_sum(const CostModel& cost, const std::vector<uint32_t>& order, std::size_t n,
              double limit) {
  return chain_dp(
      cost, order, n,
      [limit](double before, const CostModel::Stage& st) {
        return st.load() <= limit ? before + st.compute + st.comm + st.hop : kInf;
      },
      [limit](double compute, double) { return compute > limit; });
}

// Boundary refinement on the closed-form estimate (Kernighan-Lin in spirit, on a chain): move one
// cut by up to kReach positions when that lowers the estimate and both stages it touches still fit;
// repeat until no move helps. The DPs optimise proxies (bottleneck, then sum); this polishes
// against the estimate itself, which also counts how much of each stage's push is hidden.
double refine(const CostModel& cost, const std::vector<uint32_t>& order,
              std::vector<std::size_t>& cuts) {
  constexpr long kReach = 8;
  double current = cost.estimate(cuts, order);
  for (int round = 0; round < 100; ++round) {
    double best = current;
    std::size_t best_b = 0, best_at = 0;
    for (std::size_t b = 1; b + 1 < cuts.size(); ++b) {
      const auto lo = static_cast<long>(cuts[b - 1]), hi = static_cast<long>(cuts[b + 1]);
      for (long at = std::max(lo, static_cast<long>(cuts[b]) - kReach);
           at <= std::min(hi, static_cast<long>(cuts[b]) + kReach); ++at) {
        const auto pos = static_cast<std::size_t>(at);
        if (pos == cuts[b]) continue;
        if (!cost.fits(cost.stage(cuts[b - 1], pos, order[b - 1]), order[b - 1]) ||
            !cost.fits(cost.stage(pos, cuts[b + 1], order[b]), order[b])) {
          continue;
        }
        const std::size_t was = cuts[b];
        cuts[b] = pos;
        const double t = cost.estimate(cuts, order);
        cuts[b] = was;
        if (t < best - 1e-12 * best) best = t, best_b = b, best_at = pos;
      }
    }
    if (best_b == 0) break;
    cuts[best_b] = best_at;
    current = best;
  }
  return current;
}

// Device orders to try along the pipeline: as given, fastest first, slowest first, most memory
// first (the same order only once).
std::vector<std::vector<uint32_t>> device_orders(const DeviceSet& set) {
  std::vector<uint32_t> given(set.devices.size());
  std::iota(given.begin(), given.end(), 0);
  std::vector<std::vector<uint32_t>> orders{given};
  auto add = [&](auto key) {
    auto o = given;
    std::stable_sort(o.begin(), o.end(), [&](uint32_t a, uint32_t b) { return key(a) > key(b); });
    if (std::find(orders.begin(), orders.end(), o) == orders.end()) orders.push_back(o);
  };
  add([&](uint32_t d) { return set.devices[d].gflops; });
  add([&](uint32_t d) { return -set.devices[d].gflops; });
  add([&](uint32_t d) { return static_cast<double>(set.devices[d].memory_bytes); });
  return orders;
}

// No split fits: the split that least overloads memory (relative to each device's), for an error
// that names the device and the bytes missing.
Status explain_infeasible(const Problem& problem, const ChainView& chain) {
  const auto& devs = problem.devices;
  const std::size_t n = chain.size(), k = devs.devices.size();
  std::vector<uint32_t> order(k);
  std::iota(order.begin(), order.end(), 0);
  // Greedy by memory share: each device takes layers up to its share of the total memory.
  uint64_t total_capacity = 0;
  for (const auto& d : devs.devices) total_capacity += d.memory_bytes;
  const double total_load =
      static_cast<double>(chain.param_prefix[n]) + static_cast<double>(chain.act_prefix[n]);
  std::vector<std::size_t> cuts{0};
  double taken = 0, share = 0;
  std::size_t p = 0;
  for (std::size_t s = 0; s < k; ++s) {
    share += static_cast<double>(devs.devices[s].memory_bytes) / total_capacity * total_load;
    while (p < n && (s + 1 == k || taken + static_cast<double>(chain.params(p, p + 1) +
                                                               chain.acts(p, p + 1)) <= share)) {
      taken += static_cast<double>(chain.params(p, p + 1) + chain.acts(p, p + 1));
      ++p;
    }
    cuts.push_back(p);
  }
  const auto use = memory_use(problem.model, chain.assignment(cuts, order),
                              static_cast<uint32_t>(k), problem.setup);
  std::string why = memory_violation(use, devs);
  if (why.empty()) why = "the split's communication buffers do not fit either";
  return Status::error("no placement of " + problem.model.name + " fits the devices' memory: " +
                       why);
}

}  // namespace

Result<std::vector<uint32_t>> netplacer(const Problem& problem) {
  const ChainView chain(problem.model);
  const CostModel cost(chain, problem);
  const std::size_t n = chain.size();
  // Slack over the least bottleneck that phase 2 may spend to cut less (fewer for big graphs).
  // The closed-form step estimate, not the bottleneck, picks among them: a split with a higher
  // bottleneck can hide more of its push behind the pipeline.
  const std::vector<double> slack =
      n > 5000  ? std::vector<double>{0.0}
      : n > 2000 ? std::vector<double>{0.0, 0.05}
      : n > 500 ? std::vector<double>{0.0, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0}
                : std::vector<double>{0.0, 0.02, 0.05, 0.1, 0.2, 0.35, 0.5, 0.75, 1.0, 1.5, 2.0,
                                      3.0, 5.0};
  std::vector<std::vector<uint32_t>> candidates;
  for (const auto& order : device_orders(problem.devices)) {
    const Split bottleneck = min_bottleneck(cost, chain, order);
    if (bottleneck.value == kInf) continue;
    std::vector<Split> splits{bottleneck};
    for (double s : slack) {
      splits.push_back(min_sum(cost, order, n, bottleneck.value * (1 + s) * (1 + 1e-12)));
    }
    for (auto& c : splits) {
      if (c.cuts.empty()) continue;
      refine(cost, order, c.cuts);
      candidates.push_back(chain.assignment(c.cuts, order));
    }
    // No cut is a candidate too: the whole model on the order's first device, where it fits and
    // a pipeline's transfers cost more than they save (LeNet-5 on two fast devices: every split
    // was priced up to 39% slower than one device, and one was chosen: they were all there was).
    candidates.push_back(chain.assignment({}, order));
  }
  // The splits the partition baselines would make (none of them simulates) join the candidates,
  // priced by the same closed-form model; their O(K n^2) DPs are skipped on big graphs.
  if (n <= kBaselineCandidatesUpTo) {
    for (auto* make : {even_layers, torchgpipe_time, pipedream, balance_only}) {
      if (auto a = make(problem)) candidates.push_back(std::move(a.value()));
    }
  }
  // Polish the best few under the pipeline model, within a budget of estimates that shrinks as
  // the graph grows (each estimate is O(layers + edges)).
  const PipelineModel model(problem);
  const auto k = static_cast<uint32_t>(problem.devices.devices.size());
  double estimate = kInf;
  const std::vector<uint32_t> best =
      select_best(model, problem.model, chain, k, std::move(candidates), kPolished,
                  std::max<std::size_t>(64, kEstimateBudget / std::max<std::size_t>(n, 1)),
                  estimate);
  if (best.empty()) return explain_infeasible(problem, chain);
  return best;
}

}  // namespace psrt::placement
