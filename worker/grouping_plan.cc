#include "worker/grouping_plan.h"

#include <stdexcept>

#include "core/wire_grouping.h"

namespace psrt {

namespace {

void add_candidate(wire::GroupingPlan& plan, const std::string& name, const Grouping& grouping,
                   double price_ms) {
  auto* c = plan.add_candidates();
  c->set_name(name);
  for (uint32_t start : grouping.starts()) c->add_starts(start);
  c->set_price_ms(price_ms);
}

}  // namespace

wire::GroupingPlan grouping_plan(const std::string& spec_text, const sim::GroupingChoice& choice,
                                 uint32_t workers, uint32_t trials, uint32_t trial_iterations) {
  const GroupingSpec spec = *parse_grouping(spec_text);
  const bool searched = spec.kind == GroupingSpec::Kind::kAuto;
  wire::GroupingPlan plan;
  plan.set_spec(spec_text);
  add_candidate(plan, searched ? "auto" : spec.text(), choice.grouping, choice.iteration_ms);
  if (!searched) return plan;
  plan.set_search(sim::describe_search(choice, workers));
  if (trials < 2) return plan;
  for (const auto& a : choice.alternatives) {
    if (uint32_t(plan.candidates_size()) >= trials) break;
    add_candidate(plan, a.name, a.grouping, a.price_ms);
  }
  if (plan.candidates_size() > 1) plan.set_trial_iterations(trial_iterations);
  return plan;
}

JobGrouping job_grouping(const wire::GroupingPlan& plan, uint32_t tensors) {
  if (const auto e = grouping_plan_error(plan, tensors)) throw std::invalid_argument(*e);
  JobGrouping job;
  job.spec = plan.spec();
  job.search = plan.search();
  job.trial_iterations = plan.trial_iterations();
  for (const auto& c : plan.candidates()) {
    std::vector<uint32_t> starts(c.starts().begin(), c.starts().end());
    job.candidates.push_back({c.name(), Grouping::from_starts(std::move(starts), tensors),
                              c.price_ms()});
  }
  return job;
}

}  // namespace psrt
