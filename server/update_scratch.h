// Buffers one update reuses: the mean (or decoded) gradient and the list of pushes to average.
// Each UpdatePool thread owns one and so does the server's I/O thread (small chunks update
// inline), so once they have grown to the largest chunk an update allocates nothing.
#pragma once

#include <vector>

namespace psrt {

struct UpdateScratch {
  std::vector<float> grad;
  std::vector<const float*> inputs;
};

}  // namespace psrt
