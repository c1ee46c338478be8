// The engine's network spec for a job's config (native and gpu backends): the model section's
// network on the data section's images and classes; what the workers, psrt-launch's check and
// psrt-place build the job's network from.
#pragma once

#include "core/config.h"
#include "engine/network.h"

namespace psrt::engine {

inline NetSpec net_spec(const Config& config) {
  const ModelConfig& model = config.model;
  NetSpec spec;
  spec.arch = model.arch;
  spec.hidden = model.hidden;
  spec.dropout = float(model.dropout);
  spec.layers = model.layers;
  spec.channels = config.data.image_channels;  // 1: grey
  spec.height = config.data.image_rows;
  spec.width = config.data.image_cols;
  spec.classes = config.data.classes;
  return spec;
}

}  // namespace psrt::engine
