// The moments of a gradient chunk that LACO's threshold needs, and that a caller computing them on
// the way (error feedback, while it adds the residual) passes to the codec so it skips a pass.
#pragma once

namespace psrt::compress {

struct ChunkMoments {
  double sum_squares = 0;  // fp32 lanes per 1024-element block, summed in double
  float max_abs = 0;
  bool finite = true;      // false when the chunk holds a NaN or an infinity
};

}  // namespace psrt::compress
