// A model graph seen as a chain: its layers in a topological order with prefix sums, so that the
// cost of any contiguous run of that order [i, j) is O(1). Stages that are contiguous runs of a
// topological order form a pipeline: every transfer goes from an earlier stage to a later one
// (activations) or back (their gradients), so no two stages wait on each other in a cycle.
#pragma once

#include <cstdint>
#include <vector>

#include "core/model.h"
#include "core/plan.h"

namespace psrt::placement {

struct ChainView {
  explicit ChainView(const ModelDesc& model);

  std::size_t size() const { return order.size(); }
  double ms(std::size_t i, std::size_t j) const { return ms_prefix[j] - ms_prefix[i]; }
  double fwd(std::size_t i, std::size_t j) const { return fwd_prefix[j] - fwd_prefix[i]; }
  uint64_t params(std::size_t i, std::size_t j) const { return param_prefix[j] - param_prefix[i]; }
  uint64_t acts(std::size_t i, std::size_t j) const { return act_prefix[j] - act_prefix[i]; }
  // Turns cut positions (stage s covers [cuts[s], cuts[s + 1])) and each stage's device into a
  // layer-to-device map.
  std::vector<uint32_t> assignment(const std::vector<std::size_t>& cuts,
                                   const std::vector<uint32_t>& stage_device) const;

  std::vector<uint32_t> order;         // position -> layer
  std::vector<double> ms_prefix;       // forward + backward ms at the profile's speed
  std::vector<double> fwd_prefix;
  std::vector<uint64_t> param_prefix;  // parameter bytes
  std::vector<uint64_t> act_prefix;    // activation elements per sample
  // cross[i]: activation elements per sample of the distinct layers before position i that a
  // layer at position >= i reads (what a cut at i carries forward; its gradient comes back).
  std::vector<uint64_t> cross;
};

}  // namespace psrt::placement
