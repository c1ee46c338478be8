#include "core/wire_grouping.h"

#include <cmath>

#include "core/grouping_spec.h"
#include "core/yaml_reader.h"

namespace psrt {

namespace {

std::optional<std::string> text_error(const std::string& what, const std::string& text) {
  if (text.size() > kMaxGroupingText) {
    return what + " of " + std::to_string(text.size()) + " bytes; at most " +
           std::to_string(kMaxGroupingText);
  }
  if (const auto e = control_character_error(text)) return what + " " + *e;
  return std::nullopt;
}

std::optional<std::string> candidate_error(const wire::GroupingCandidate& c, uint32_t tensors) {
  if (auto e = text_error("a name", c.name())) return e;
  if (c.name().empty()) return std::string("no name");
  if (!std::isfinite(c.price_ms()) || c.price_ms() < 0 || c.price_ms() > 1e9) {
    return "a price of " + std::to_string(c.price_ms()) + " ms (allowed 0 to 1e9)";
  }
  if (c.starts_size() == 0) return std::string("no groups");
  if (c.starts(0) != 0) return "a first group starting at key " + std::to_string(c.starts(0));
  for (int i = 1; i < c.starts_size(); ++i) {
    if (c.starts(i) <= c.starts(i - 1) || c.starts(i) >= tensors) {
      return "group " + std::to_string(i) + " starting at key " + std::to_string(c.starts(i)) +
             " after " + std::to_string(c.starts(i - 1)) + " (starts must ascend below " +
             std::to_string(tensors) + ", the model's tensors)";
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> grouping_plan_error(const wire::GroupingPlan& plan, uint32_t tensors) {
  if (auto e = text_error("a spec", plan.spec())) return e;
  std::string why;
  if (!parse_grouping(plan.spec(), &why)) return "spec '" + plan.spec() + "': " + why;
  if (auto e = text_error("a search description", plan.search())) return e;
  const int n = plan.candidates_size();
  if (n < 1 || n > kMaxGroupingCandidates) {
    return std::to_string(n) + " candidates (allowed 1 to " +
           std::to_string(kMaxGroupingCandidates) + ")";
  }
  if (n > 1 && (plan.trial_iterations() < 1 || plan.trial_iterations() > 100)) {
    return std::to_string(plan.trial_iterations()) +
           " trial iterations for its runners-up (allowed 1 to 100)";
  }
  for (int i = 0; i < n; ++i) {
    if (auto e = candidate_error(plan.candidates(i), tensors)) {
      return "candidate " + std::to_string(i) + " has " + *e;
    }
  }
  return std::nullopt;
}

}  // namespace psrt
