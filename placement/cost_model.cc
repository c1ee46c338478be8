#include "placement/cost_model.h"

#include <algorithm>

#include "scheduler/schedule_policy.h"

namespace psrt::placement {

double CostModel::Stage::load() const { return std::max(cycle, link); }

CostModel::CostModel(const ChainView& chain, const Problem& problem) : chain_(chain) {
  const auto& devs = problem.devices;
  for (const auto& d : devs.devices) {
    scale_.push_back(compute_scale(problem.model, d));
    memory_.push_back(d.memory_bytes);
  }
  const Link slow = devs.slowest();
  const auto& setup = problem.setup;
  act_ms_per_element_ = 4.0 * setup.batch_size / slow.bytes_per_s * 1e3;
  hop_ms_ = 2.0 * slow.latency_ms;
  const double share =
      std::min(1.0, double(problem.options.servers) /
                        (double(problem.options.replicas) * double(devs.devices.size())));
  push_ms_per_byte_ = 1e3 / (devs.server_link.bytes_per_s * share);
  push_latency_ms_ = 2.0 * devs.server_link.latency_ms;
  chunk_bytes_ = problem.options.chunk_bytes;
  mode_ = problem.options.mode;
  param_factor_ = 2 + optimizer_state_copies(setup.optimizer);
  const uint64_t m = setup.micro_batch_size();
  act_bytes_ = 4 * m * setup.micro_batches;
  comm_bytes_ = 8 * m;
  micro_ = setup.micro_batches;
}

bool CostModel::static_fits(std::size_t i, std::size_t j, uint32_t d) const {
  return param_factor_ * chain_.params(i, j) + act_bytes_ * chain_.acts(i, j) <= memory_[d];
}

CostModel::Stage CostModel::stage(std::size_t i, std::size_t j, uint32_t d) const {
  Stage s;
  if (i == j) return s;
  const uint64_t crossing = chain_.cross[i] + chain_.cross[j];
  s.compute = compute(i, j, d);
  s.forward = chain_.fwd(i, j) * scale_[d];
  s.comm = static_cast<double>(crossing) * act_ms_per_element_;
  s.link = static_cast<double>(std::max(chain_.cross[i], chain_.cross[j])) * act_ms_per_element_;
  s.hop = chain_.cross[i] > 0 ? hop_ms_ : 0.0;
  const uint64_t params = chain_.params(i, j);
  s.push = params == 0 ? 0.0
                       : static_cast<double>(params + std::min(params, chunk_bytes_)) *
                                 push_ms_per_byte_ +
                             push_latency_ms_;
  const SchedulePolicy policy(mode_);
  const double own = policy.holds_until_backward_done() ? 0.0
                     : !policy.by_priority()            ? (s.compute - s.forward) / micro_
                                                        : s.compute / micro_;
  s.cycle = s.compute + std::max(0.0, s.push - own);
  s.memory = param_factor_ * chain_.params(i, j) + act_bytes_ * chain_.acts(i, j) +
             comm_bytes_ * crossing;
  return s;
}

double CostModel::estimate(const std::vector<std::size_t>& cuts,
                           const std::vector<uint32_t>& devices) const {
  std::vector<Stage> stages;
  for (std::size_t s = 0; s + 1 < cuts.size(); ++s) {
    if (cuts[s] != cuts[s + 1]) stages.push_back(stage(cuts[s], cuts[s + 1], devices[s]));
  }
  if (stages.empty()) return 0;
  double sum = 0, fmax = 0, bmax = 0, link = 0, hops = 0, cycle = 0, down = 0;
  for (auto st = stages.rbegin(); st != stages.rend(); ++st) {  // last stage first
    sum += st->compute + st->comm;
    hops += st->hop;
    fmax = std::max(fmax, st->forward);
    bmax = std::max(bmax, st->compute - st->forward);
    link = std::max(link, st->link);
    cycle = std::max(cycle, st->cycle + down);
    down += (st->compute + st->comm) / micro_ + st->hop;
  }
  const double pipe = (sum + (micro_ - 1) * std::max(fmax + bmax, link)) / micro_ + hops;
  // Nothing hides the first stage's push: its next forward is the first thing that happens.
  const Stage& first = stages.front();
  return std::max(pipe + (first.cycle - first.compute), cycle);
}

}  // namespace psrt::placement
