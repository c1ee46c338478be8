// NetPlacer's last step: every candidate split priced by the closed-form pipeline model
// (placement/pipeline_model.h), the best few refined under it, the best kept. No simulation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "placement/chain_view.h"
#include "placement/pipeline_model.h"

namespace psrt::placement {

// A split as contiguous runs of the chain's order: stage s = [cuts[s], cuts[s + 1]) on
// devices[s] (runs may be empty).
struct Runs {
  std::vector<std::size_t> cuts;
  std::vector<uint32_t> devices;
};

// The runs of an assignment along the chain, every device appearing once (the unused ones as
// empty runs at the end); false when a device holds two separate runs.
bool as_runs(const ChainView& chain, const std::vector<uint32_t>& device_of_layer,
             uint32_t device_count, Runs& out);

// Kernighan-Lin-like refinement under the pipeline model: each round, every cut moves to the best
// position within `reach` of it and every pair of stages may swap devices, while the estimate
// improves and at most `budget` estimates are spent. Returns the final estimate.
double polish(const PipelineModel& model, const ChainView& chain, Runs& runs, std::size_t budget);

// Fiduccia-Mattheyses passes under the pipeline model, for splits that need not be runs of one
// order (a DAG's branches on different devices): in each pass, up to 16 times the best move of an
// unlocked layer to the device of one of its inputs or consumers is made (even when it costs)
// and the layer locked; the best prefix of the pass is kept. The model refuses moves that
// overfill a device or make stages wait on each other in a cycle. Passes repeat while they gain,
// within `budget` estimates. Returns the price.
double move_layers(const PipelineModel& model, const ModelDesc& m,
                   std::vector<uint32_t>& device_of_layer, double current, std::size_t budget);

// The best of `candidates` (assignments) by the pipeline model, after polishing the `refine`
// best contiguous ones (half the budget of estimates) and then moving layers of the best (the
// other half); empty when none fits. `estimate` receives its price.
std::vector<uint32_t> select_best(const PipelineModel& model, const ModelDesc& m,
                                  const ChainView& chain, uint32_t device_count,
                                  std::vector<std::vector<uint32_t>> candidates,
                                  std::size_t refine, std::size_t budget, double& estimate);

}  // namespace psrt::placement
