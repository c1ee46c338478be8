#include "scheduler/sim/grad_optimizer.h"

#include <algorithm>
#include <chrono>

#include "scheduler/sim/simulator.h"

namespace psrt::sim {

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

namespace {

class Search {
 public:
  Search(const ModelDesc& model, const SimConfig& config, uint32_t budget)
      : model_(model), config_(config), budget_(budget) {}

  uint32_t evaluations() const { return evaluations_; }
  bool spent() const { return evaluations_ >= budget_; }

  double cost(const Grouping& g) {
    ++evaluations_;
    config_.grouping = g;
    return simulate(model_, config_).iteration_ms;
  }

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
  uint32_t evaluations_ = 0;
};

std::vector<std::pair<std::string, Grouping>> candidates(const ModelDesc& model,
                                                         const SimConfig& config) {
  std::vector<std::pair<std::string, Grouping>> out;
  const auto n = static_cast<uint32_t>(model.tensors.size());
  out.emplace_back("none", Grouping::singletons(n));
  out.emplace_back("mgwfbp", mgwfbp_grouping(model, config));
  for (const char* text : {"ddp:25MiB:1MiB", "horovod:64MiB:5", "horovod:128MiB:1"}) {
    out.emplace_back(text, static_grouping(model, *parse_grouping(text)));
  }
  for (uint64_t b = 4096; b < model.total_bytes() * 2; b *= 2) {
    GroupingSpec s;
    s.kind = GroupingSpec::Kind::kSize;
    s.bytes = b;
    out.emplace_back(s.text(), static_grouping(model, s));
  }
  // Distinct groupings only: equal ones would cost the same.
  std::vector<std::pair<std::string, Grouping>> unique;
  for (auto& c : out) {
    const bool seen = std::any_of(unique.begin(), unique.end(),
                                  [&](const auto& u) { return u.second == c.second; });
    if (!seen) unique.push_back(std::move(c));
  }
  return unique;
}

}  // namespace

GroupingChoice choose_grouping(const ModelDesc& model, const SimConfig& config,
                               const GroupingSpec& spec, uint32_t max_evaluations) {
  const auto t0 = std::chrono::steady_clock::now();
  GroupingChoice choice;
  if (spec.kind == GroupingSpec::Kind::kMgwfbp) {
    choice.grouping = mgwfbp_grouping(model, config);
  } else if (spec.kind != GroupingSpec::Kind::kAuto) {
    choice.grouping = static_grouping(model, spec);
  } else {
    Search search(model, config, std::max<uint32_t>(max_evaluations, 1));
    double best_ms = 0;
    std::vector<uint32_t> best;
    for (auto& [name, g] : candidates(model, config)) {
      const double ms = search.cost(g);
      if (name == "none") choice.ungrouped_ms = ms;
      if (best.empty() || ms < best_ms) {
        best_ms = ms;
        best = g.starts();
        choice.start = name;
      }
    }
    search.improve(best, best_ms);
    choice.grouping = Grouping::from_starts(best, static_cast<uint32_t>(model.tensors.size()));
    choice.iteration_ms = best_ms;
    choice.evaluations = search.evaluations();
  }
  choice.search_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return choice;
}

}  // namespace psrt::sim
