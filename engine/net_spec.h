// The engine's network spec for the model section of a job's config (native and gpu backends):
// what the workers, psrt-launch's check and psrt-place build the job's network from.
#pragma once

#include "core/config.h"
#include "engine/network.h"

namespace psrt::engine {

inline NetSpec net_spec(const ModelConfig& model) {
  NetSpec spec;
  spec.arch = model.arch;
  spec.hidden = model.hidden;
  spec.dropout = float(model.dropout);
  spec.layers = model.layers;
  return spec;
}

}  // namespace psrt::engine
