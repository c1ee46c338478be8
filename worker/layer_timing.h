// Per-layer compute times of a backend, measured by running it: GradOptimizer's search needs when
// backward produces each gradient, which a profile states and a native network does not.
#pragma once

#include "core/grouping_spec.h"
#include "core/model.h"
#include "worker/backend.h"

namespace psrt {

// Whether the grouping needs layer times that `model` lacks (auto, mgwfbp and horovod simulate or
// read backward's timing; every layer's times are 0).
bool grouping_needs_layer_times(const GroupingSpec& spec, const ModelDesc& model);

// Runs iteration 0's forward and backward `passes` times (the first a warm-up) and sets each
// layer's forward_ms and backward_ms in `model` to its fastest measured pass. The backend's
// parameters are untouched, and its random streams are put back where they started
// (resume_at(0)), so training afterwards is what it would have been. `passes` >= 2.
void measure_layer_times(Backend& backend, ModelDesc& model, int passes);

}  // namespace psrt
