// The placers that search by simulation: simulated annealing (the approach NetPlacer's design
// contrasts with: every candidate is priced by the simulator, so the search inherits its cost and
// its errors) and the exhaustive optimum over pipeline splits for small graphs.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <random>
#include <string>

#include "placement/baselines.h"
#include "placement/chain_view.h"
#include "scheduler/sim/pipeline.h"
#include "scheduler/sim/sim_config.h"

namespace psrt::placement {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

Plan as_plan(const Problem& p, const std::vector<uint32_t>& device_of_layer) {
  Plan plan;
  plan.model = p.model.name;
  plan.device_of_layer = device_of_layer;
  plan.setup = p.setup;
  plan.devices = p.devices;
  return plan;
}

// The shard map every simulation of p's plans uses: built once per search.
ShardMap shards_of(const Problem& p) {
  return sim::shard_map_for(p.model, p.options.servers, p.options.mode, p.options.chunk_bytes);
}

// The search's time limit (PlacerOptions::max_search_s), checked between simulations.
class Deadline {
 public:
  explicit Deadline(double limit_s) : limit_s_(limit_s) {}
  bool passed() const {
    return limit_s_ > 0 && std::chrono::duration<double>(Clock::now() - start_).count() > limit_s_;
  }
  Status error(const std::string& where) const {
    char s[32];
    std::snprintf(s, sizeof s, "%g", limit_s_);
    return Status::error(
        std::string("no plan within the search limit of ") + s + " s (" + where +
        "): this placer simulates every candidate, so its time grows with layers x "
        "micro-batches x devices; use netplacer, fewer micro-batches, or "
        "psrt-place without a limit");
  }

 private:
  using Clock = std::chrono::steady_clock;
  double limit_s_;
  Clock::time_point start_ = Clock::now();
};

struct Best {
  double ms = kInf;
  std::vector<uint32_t> assignment;
  const ShardMap* shards = nullptr;
  const Deadline* deadline = nullptr;
  bool stopped = false;  // the deadline passed before the enumeration ended
  uint64_t simulated = 0;
  void offer(const Problem& p, std::vector<uint32_t> a) {
    const double t = simulated_step_ms(p, a, shards);
    if (p.options.progress) p.options.progress(++simulated, 0);
    if (t < ms) ms = t, assignment = std::move(a);
  }
};

// Devices that are interchangeable (same memory and speed, uniform links) are tried only once at
// each position: the first unused one of its kind.
bool same_kind(const DeviceSet& s, uint32_t a, uint32_t b) {
  return s.pair.empty() && s.devices[a].memory_bytes == s.devices[b].memory_bytes &&
         s.devices[a].gflops == s.devices[b].gflops;
}

void enumerate(const Problem& p, const ChainView& chain, std::vector<std::size_t>& cuts,
               std::vector<uint32_t>& devs, std::vector<bool>& used, Best& best) {
  const std::size_t n = chain.size(), at = cuts.back();
  if (best.stopped || (best.deadline && best.deadline->passed())) {
    best.stopped = true;
    return;
  }
  if (at == n) {
    best.offer(p, chain.assignment(cuts, devs));
    return;
  }
  const auto k = static_cast<uint32_t>(p.devices.devices.size());
  for (uint32_t d = 0; d < k; ++d) {
    if (used[d]) continue;
    bool twin = false;  // an unused device of the same kind with a lower index
    for (uint32_t e = 0; e < d && !twin; ++e) twin = !used[e] && same_kind(p.devices, e, d);
    if (twin) continue;
    used[d] = true;
    devs.push_back(d);
    for (std::size_t end = at + 1; end <= n; ++end) {
      cuts.push_back(end);
      enumerate(p, chain, cuts, devs, used, best);
      cuts.pop_back();
    }
    devs.pop_back();
    used[d] = false;
  }
}

}  // namespace

double simulated_step_ms(const Problem& p, const std::vector<uint32_t>& device_of_layer,
                         const ShardMap* shards) {
  sim::PipelineOptions o;
  o.mode = p.options.mode;
  o.chunk_bytes = p.options.chunk_bytes;
  o.replicas = p.options.replicas;
  o.servers = p.options.servers;
  o.calibration = p.options.calibration;
  o.host_cores = p.options.host_cores;
  o.shards = shards;
  const auto r = sim::simulate_pipeline(p.model, as_plan(p, device_of_layer), o);
  return r.fits ? r.step_ms : kInf;
}

Assignment exhaustive(const Problem& p) {
  if (p.model.layers.size() > p.options.exhaustive_max_layers) {
    return Status::error("exhaustive search is for graphs of up to " +
                         std::to_string(p.options.exhaustive_max_layers) + " layers, not " +
                         std::to_string(p.model.layers.size()));
  }
  const ChainView chain(p.model);
  std::vector<std::size_t> cuts{0};
  std::vector<uint32_t> devs;
  std::vector<bool> used(p.devices.devices.size(), false);
  const ShardMap shards = shards_of(p);
  const Deadline deadline(p.options.max_search_s);
  Best best;
  best.shards = &shards;
  best.deadline = &deadline;
  enumerate(p, chain, cuts, devs, used, best);
  if (best.stopped) return deadline.error("the enumeration unfinished");
  if (best.ms == kInf) return Status::error("no pipeline split fits the devices' memory");
  return best.assignment;
}

Assignment annealing(const Problem& p) {
  const ChainView chain(p.model);
  const std::size_t n = chain.size(), k = p.devices.devices.size();
  std::vector<std::size_t> cuts(k + 1);
  for (std::size_t s = 0; s <= k; ++s) cuts[s] = s * n / k;
  std::vector<uint32_t> devs(k);
  std::iota(devs.begin(), devs.end(), 0);
  std::mt19937_64 rng(p.options.seed);
  const ShardMap shards = shards_of(p);
  const Deadline deadline(p.options.max_search_s);
  Best best;
  best.shards = &shards;
  double current = simulated_step_ms(p, chain.assignment(cuts, devs), &shards);
  if (current < best.ms) best.ms = current, best.assignment = chain.assignment(cuts, devs);
  const double scale = std::isfinite(current) ? current : 1.0;
  for (uint32_t step = 0; step < p.options.anneal_steps; ++step) {
    if (deadline.passed()) {
      return deadline.error("step " + std::to_string(step) + " of " +
                            std::to_string(p.options.anneal_steps));
    }
    const double temp = 0.05 * scale * std::pow(1e-3, double(step) / p.options.anneal_steps);
    auto next_cuts = cuts;
    auto next_devs = devs;
    if (k > 1 && rng() % 5 == 0) {
      std::swap(next_devs[rng() % k], next_devs[rng() % k]);
    } else if (k > 1) {
      const std::size_t b = 1 + rng() % (k - 1);
      const auto shift = static_cast<long>(rng() % 7) - 3;
      const long moved = static_cast<long>(next_cuts[b]) + shift;
      next_cuts[b] = static_cast<std::size_t>(std::clamp<long>(
          moved, static_cast<long>(next_cuts[b - 1]), static_cast<long>(next_cuts[b + 1])));
    }
    const auto a = chain.assignment(next_cuts, next_devs);
    const double t = simulated_step_ms(p, a, &shards);
    if (p.options.progress) p.options.progress(step + 1, p.options.anneal_steps);
    std::uniform_real_distribution<double> u(0, 1);
    if (t <= current || (std::isfinite(t) && u(rng) < std::exp((current - t) / temp))) {
      current = t;
      cuts = next_cuts;
      devs = next_devs;
      if (t < best.ms) best.ms = t, best.assignment = a;
    }
  }
  if (best.ms == kInf) return Status::error("annealing found no split that fits in memory");
  return best.assignment;
}

}  // namespace psrt::placement
