#include "scheduler/sim/grad_optimizer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <optional>

#include "scheduler/sim/parallel_prices.h"
#include "scheduler/sim/simulator.h"

namespace psrt::sim {

std::vector<GroupingSpec> baseline_specs(double scale) {
  // As the bench scales them (bench/priority/psrt_grouping_bench.py): truncated, 4 at least
  // (exact at scale 1).
  const auto shrink = [scale](uint64_t b) {
    return std::max<uint64_t>(4, static_cast<uint64_t>(double(b) * scale));
  };
  std::vector<GroupingSpec> out;
  for (const char* text : {"ddp:25MiB:1MiB", "horovod:64MiB:5", "horovod:128MiB:1"}) {
    GroupingSpec s = *parse_grouping(text);
    s.bytes = shrink(s.bytes);
    if (s.first_bytes) s.first_bytes = shrink(s.first_bytes);
    s.cycle_ms *= scale;
    out.push_back(s);
  }
  return out;
}

Grouping mgwfbp_grouping(const ModelDesc& model, const SimConfig& config) {
  const auto n = static_cast<uint32_t>(model.tensors.size());
  const double fan = std::max(1.0, double(config.workers) / config.servers);
  const Calibration& c = config.calibration;
  const double a = config.latency_ms + (c.worker_message_us + fan * 2 * c.server_message_us) / 1e3;
  auto t_comm = [&](uint64_t bytes) {
    return a + double(bytes) * fan * 1e3 / config.bandwidth_bytes_per_s;
  };
  const auto ready = backward_ready_ms(model);
  std::vector<uint32_t> starts;
  double link_free = 0;
  uint64_t bytes = 0;
  for (uint32_t k = n; k-- > 0;) {
    bytes += model.tensors[k].num_elements * 4;
    // The group holding k would start when the link is free and k is ready.
    const double start = std::max(link_free, ready[k]);
    const bool merge_next = k > 0 && ready[k - 1] - start < a;
    if (!merge_next) {
      starts.push_back(k);
      link_free = start + t_comm(bytes);
      bytes = 0;
    }
  }
  std::reverse(starts.begin(), starts.end());
  return Grouping::from_starts(std::move(starts), n);
}

double jittered_ms(const ModelDesc& model, const SimConfig& config, uint64_t* most_events,
                   double nominal_ms) {
  double sum = 0;
  for (double f : kJitter) {
    if (f == 1.0 && nominal_ms >= 0) {
      sum += nominal_ms;
      continue;
    }
    SimConfig c = config;
    c.bandwidth_bytes_per_s *= f;
    const SimResult r = simulate(model, c);
    if (most_events) *most_events = std::max(*most_events, r.events);
    sum += r.iteration_ms;
  }
  return sum / double(kJitter.size());
}

namespace {

class Search {
 public:
  Search(const ModelDesc& model, const SimConfig& config, uint32_t budget, uint32_t threads)
      : model_(model), config_(config), budget_(budget), threads_(threads) {}

  uint32_t evaluations() const { return evaluations_; }
  bool spent() const { return evaluations_ + kJitter.size() > budget_; }

  // The search's price of g: jittered_ms, kJitter.size() simulations (counted even when
  // prefetch() ran them: the search's course is the same with one thread as with many).
  double cost(const Grouping& g) {
    evaluations_ += uint32_t(kJitter.size());
    auto it = prices_.find(g.starts());
    if (it == prices_.end()) {
      config_.grouping = g;
      JitteredPrice p;
      p.ms = jittered_ms(model_, config_, &p.events);
      it = prices_.emplace(g.starts(), p).first;
    }
    // Only the prices the search takes count towards most_events(): a price made ahead and
    // never asked for must not move the check on the whole cluster (verify_on_full_cluster),
    // or workers with different core counts could choose differently.
    events_ = std::max(events_, it->second.events);
    return it->second.ms;
  }
  // Prices the groupings cost() is about to ask for, on threads_ threads at once: at most as
  // many as the budget has left (all of them with `whatever_budget`).
  // One thread: nothing ahead, each price made when asked (the reference the tests compare to).
  void prefetch(const std::vector<Grouping>& groupings, bool whatever_budget = false) {
    if (search_threads(threads_) == 1) return;
    std::vector<Grouping> todo;
    const std::size_t room = (budget_ - std::min(budget_, evaluations_)) / kJitter.size();
    for (const Grouping& g : groupings) {
      if (!whatever_budget && todo.size() >= room) break;
      const bool seen =
          std::any_of(todo.begin(), todo.end(), [&](const auto& t) { return t == g; });
      if (!seen && !prices_.count(g.starts())) todo.push_back(g);
    }
    if (todo.size() < 2) return;  // nothing to run side by side
    const auto prices = jittered_prices(model_, config_, todo, threads_);
    for (std::size_t i = 0; i < todo.size(); ++i) prices_[todo[i].starts()] = prices[i];
  }
  uint64_t most_events() const { return events_; }  // of one simulation so far

  // Improves `best` by moving and removing boundaries while the budget lasts.
  void improve(std::vector<uint32_t>& best, double& best_ms) {
    const auto n = static_cast<uint32_t>(model_.tensors.size());
    bool changed = true;
    while (changed && !spent()) {
      changed = false;
      for (std::size_t i = 1; i < best.size() && !spent(); ++i) {
        std::vector<std::vector<uint32_t>> tries;
        auto without = best;
        without.erase(without.begin() + std::ptrdiff_t(i));
        tries.push_back(without);
        for (int d : {-1, 1}) {
          auto moved = best;
          const int64_t to = int64_t(moved[i]) + d;
          const int64_t lo = int64_t(moved[i - 1]);
          const int64_t hi = i + 1 < moved.size() ? int64_t(moved[i + 1]) : int64_t(n);
          if (to <= lo || to >= hi) continue;
          moved[i] = uint32_t(to);
          tries.push_back(moved);
        }
        std::vector<Grouping> priced;
        for (const auto& t : tries) priced.push_back(Grouping::from_starts(t, n));
        prefetch(priced);
        for (auto& t : tries) {
          if (spent()) break;
          const double ms = cost(Grouping::from_starts(t, n));
          if (ms < best_ms) {
            best_ms = ms;
            best = std::move(t);
            changed = true;
            break;
          }
        }
      }
    }
  }

 private:
  const ModelDesc& model_;
  SimConfig config_;
  uint32_t budget_;
  uint32_t threads_;
  uint32_t evaluations_ = 0;
  uint64_t events_ = 0;
  std::map<std::vector<uint32_t>, JitteredPrice> prices_;  // by group starts
};

// A candidate grouping, and the spec it came from (kNone for none and mgwfbp).
struct Candidate {
  std::string name;
  Grouping grouping;
  GroupingSpec spec;
};

// The size or DDP-shaped spec of cap `bytes` (DDP's first bucket 1/25 of the others, as 1 MiB
// to 25 MiB); nullopt where that first bucket would not be smaller than the others.
std::optional<GroupingSpec> capped(GroupingSpec::Kind kind, uint64_t bytes) {
  GroupingSpec s;
  s.kind = kind;
  s.bytes = bytes;
  if (kind != GroupingSpec::Kind::kDdp) return s;
  s.first_bytes = std::max<uint64_t>(4096, bytes / 25);
  if (s.first_bytes >= s.bytes) return std::nullopt;
  return s;
}

std::vector<Candidate> candidates(const ModelDesc& model, const SimConfig& config) {
  std::vector<Candidate> out;
  const auto n = static_cast<uint32_t>(model.tensors.size());
  out.push_back({"none", Grouping::singletons(n), {}});
  out.push_back({"mgwfbp", mgwfbp_grouping(model, config), {}});
  for (const GroupingSpec& s : baseline_specs(model.scale)) {
    out.push_back({s.text(), static_grouping(model, s), s});
  }
  // Even caps over the model's range, and DDP's shape at each: a model's size, not a full-size
  // network's, sets the scale. Factors of 2; the winner is refined between them (refine_cap).
  for (double cap = 4096; cap < double(model.total_bytes()) * 2; cap *= 2) {
    for (auto kind : {GroupingSpec::Kind::kSize, GroupingSpec::Kind::kDdp}) {
      if (const auto s = capped(kind, static_cast<uint64_t>(cap))) {
        out.push_back({s->text(), static_grouping(model, *s), *s});
      }
    }
  }
  // Distinct groupings only: equal ones would cost the same.
  std::vector<Candidate> unique;
  for (auto& c : out) {
    const bool seen = std::any_of(unique.begin(), unique.end(),
                                  [&](const auto& u) { return u.grouping == c.grouping; });
    if (!seen) unique.push_back(std::move(c));
  }
  return unique;
}

// A size or DDP-shaped winner refined between the ladder's steps: its cap times and divided by
// sqrt(2), then 2^(1/4) around the better (at most four prices, within the budget).
void refine_cap(const ModelDesc& model, Search& search, Candidate& best, double& best_ms) {
  const auto kind = best.spec.kind;
  if (kind != GroupingSpec::Kind::kSize && kind != GroupingSpec::Kind::kDdp) return;
  for (const double step : {std::sqrt(2.0), std::pow(2.0, 0.25)}) {
    const double cap = double(best.spec.bytes);
    std::vector<Grouping> ahead;
    for (const double f : {step, 1.0 / step}) {
      const auto s = capped(kind, std::max<uint64_t>(4096, static_cast<uint64_t>(cap * f)));
      if (s) ahead.push_back(static_grouping(model, *s));
    }
    search.prefetch(ahead);
    for (const double f : {step, 1.0 / step}) {
      const auto s = capped(kind, std::max<uint64_t>(4096, static_cast<uint64_t>(cap * f)));
      if (!s || search.spent()) continue;
      Grouping g = static_grouping(model, *s);
      if (g == best.grouping) continue;
      const double ms = search.cost(g);
      if (ms < best_ms) {
        best_ms = ms;
        best = {s->text(), std::move(g), *s};
      }
    }
  }
}

// On a reduced cluster, the search's choice, its starting candidate and no grouping simulated on
// the whole cluster, the fastest kept, when those simulations fit in kVerifyEvents.
void verify_on_full_cluster(const ModelDesc& model, const SimConfig& config,
                            const SimConfig& searched, uint64_t events, const Grouping& start,
                            GroupingChoice& choice) {
  const auto n = static_cast<uint32_t>(model.tensors.size());
  const double estimate =
      3.0 * double(kJitter.size()) * double(events) * config.workers / searched.workers;
  if (searched.workers == config.workers || estimate > double(kVerifyEvents)) return;
  SimConfig full = config;
  const auto cost = [&](const Grouping& g) {
    full.grouping = g;
    choice.evaluations += uint32_t(kJitter.size());
    return jittered_ms(model, full);
  };
  const Grouping none = Grouping::singletons(n);
  choice.iteration_ms = cost(choice.grouping);
  choice.ungrouped_ms = choice.grouping == none ? choice.iteration_ms : cost(none);
  if (choice.ungrouped_ms < choice.iteration_ms) {
    choice.grouping = none;
    choice.iteration_ms = choice.ungrouped_ms;
  }
  // The start only when it differs from both (a candidate the local search did not move).
  if (!(start == choice.grouping) && !(start == none)) {
    const double ms = cost(start);
    if (ms < choice.iteration_ms) {
      choice.grouping = start;
      choice.iteration_ms = ms;
    }
  }
  choice.verified = true;
}

// The cheapest of each family in `priced` whose grouping differs from `chosen` and from the ones
// kept before it, cheapest first.
std::vector<NamedGrouping> runners_up(std::vector<NamedGrouping> priced, const Grouping& chosen) {
  std::stable_sort(priced.begin(), priced.end(),
                   [](const auto& a, const auto& b) { return a.price_ms < b.price_ms; });
  std::vector<NamedGrouping> out;
  std::vector<std::string> families;
  for (auto& c : priced) {
    const std::string family = c.name.substr(0, c.name.find(':'));
    const auto same = [&](const NamedGrouping& o) { return o.grouping == c.grouping; };
    if (c.grouping == chosen || std::any_of(out.begin(), out.end(), same) ||
        std::find(families.begin(), families.end(), family) != families.end()) {
      continue;
    }
    families.push_back(family);
    out.push_back(std::move(c));
  }
  return out;
}

void search_grouping(const ModelDesc& model, const SimConfig& config, uint32_t max_evaluations,
                     uint32_t simulated_workers, uint32_t threads, GroupingChoice& choice) {
  const SimConfig searched = reduced_cluster(config, simulated_workers);
  Search search(model, searched, std::max<uint32_t>(max_evaluations, 1), threads);
  // Every candidate priced, whatever the budget (the ladder is short: a step per doubling).
  double best_ms = 0;
  Candidate start;
  std::vector<NamedGrouping> priced;
  std::vector<Candidate> all = candidates(model, config);
  std::vector<Grouping> ahead;
  for (const auto& c : all) ahead.push_back(c.grouping);
  search.prefetch(ahead, true);
  for (auto& c : all) {
    const double ms = search.cost(c.grouping);
    if (c.name == "none") choice.ungrouped_ms = ms;
    priced.push_back({c.name, c.grouping, ms});
    if (start.name.empty() || ms < best_ms) {
      best_ms = ms;
      start = std::move(c);
    }
  }
  refine_cap(model, search, start, best_ms);
  priced.push_back({start.name, start.grouping, best_ms});
  choice.start = start.name;
  std::vector<uint32_t> best = start.grouping.starts();
  search.improve(best, best_ms);
  choice.grouping = Grouping::from_starts(best, static_cast<uint32_t>(model.tensors.size()));
  choice.iteration_ms = best_ms;
  choice.evaluations = search.evaluations();
  choice.simulated_workers = searched.workers;
  verify_on_full_cluster(model, config, searched, search.most_events(), start.grouping, choice);
  choice.alternatives = runners_up(std::move(priced), choice.grouping);
}

}  // namespace

std::string describe_search(const GroupingChoice& c, uint32_t workers) {
  std::string out = std::to_string(c.evaluations) + " simulations in " +
                    std::to_string(std::llround(c.search_ms)) + " ms, from " + c.start;
  if (c.simulated_workers == 0 || c.simulated_workers >= workers) return out;
  out += "; " + std::to_string(c.simulated_workers) + " simulated workers for " +
         std::to_string(workers);
  return out + (c.verified ? ", checked on all " + std::to_string(workers)
                           : ", not checked on all (too large to simulate in full quickly)");
}

GroupingChoice choose_grouping(const ModelDesc& model, const SimConfig& config,
                               const GroupingSpec& spec, uint32_t max_evaluations,
                               uint32_t simulated_workers, uint32_t threads) {
  const auto t0 = std::chrono::steady_clock::now();
  GroupingChoice choice;
  if (spec.kind == GroupingSpec::Kind::kMgwfbp) {
    choice.grouping = mgwfbp_grouping(model, config);
  } else if (spec.kind != GroupingSpec::Kind::kAuto) {
    choice.grouping = static_grouping(model, spec);
  } else {
    search_grouping(model, config, max_evaluations, simulated_workers, threads, choice);
  }
  choice.search_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return choice;
}

}  // namespace psrt::sim
