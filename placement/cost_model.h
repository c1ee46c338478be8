// NetPlacer's analytic cost of a stage and of a pipeline (no simulation). For the run [i, j) of a
// ChainView on device d, whole batch B in M micro-batches of m:
//   compute  c = ms(i, j) * compute_scale(d)                       (forward + backward)
//   comm     x = 4 B (cross[i] + cross[j]) / link                  (activations in, gradients in)
//   link     y = 4 B max(cross[i], cross[j]) / link    (the busiest channel: each ordered pair of
//                devices has its own, so activations in and gradients in do not share one)
//   hop      h = 2 latency when cross[i] > 0                        (per micro-batch, not a load)
//   push     p = (P + min(P, chunk)) / server share + 2 latency     (P = params(i, j) bytes: the
//            gradients go out chunk by chunk and the values follow one chunk behind)
//   memory     = (2 + k) params + 4 m M acts(i, j) + 8 m (cross[i] + cross[j])
//                (core's memory model with the cuts' crossing sets; >= the exact figure)
// A stage's load is max(c + max(0, p - o), y): its own work per iteration (compute, then the
// part of its push the mode does not overlap) or its busiest link, whichever is longer. A
// pipeline's estimated step is the larger of two bounds:
//   the pipeline  (sum_s (c_s + x_s) + (M - 1) max(max_s f_s + max_s b_s, max_s y_s)) / M
//                 + sum_s h_s + max(0, p_0 - o_0)
//                 (GPipe fill and drain, forward then backward: one micro-batch's path plus M - 1
//                 at the slowest stage of each phase; then the first stage's push, which nothing
//                 hides: its next forward is the first thing the next iteration does)
//   the cycles    max_s (c_s + max(0, p_s - o_s) + sum_{s' > s} ((c_s' + x_s') / M + h_s'))
//                 (every iteration a device computes its layers, waits for the first
//                 micro-batch's round trip through the stages after it, and gets its new values
//                 back before its next forward; the stages before it run on meanwhile)
// o_s is what the push mode overlaps with the stage's own work: (f_s + b_s) / M in the priority
// modes (gradients leave during the last micro-batch's backward, and the first layers' values are
// back before the rest, so the next forward starts early), b_s / M in the FIFO modes, 0 in bigdl.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/plan.h"
#include "placement/chain_view.h"
#include "placement/placer.h"

namespace psrt::placement {

class CostModel {
 public:
  CostModel(const ChainView& chain, const Problem& problem);

  struct Stage {
    double compute = 0, forward = 0, comm = 0, link = 0, push = 0, hop = 0;
    double cycle = 0;  // c + max(0, p - o): the device's own work per iteration
    uint64_t memory = 0;
    double load() const;
  };
  // The run [i, j) on device d; an empty run (i == j) costs nothing.
  Stage stage(std::size_t i, std::size_t j, uint32_t d) const;
  bool fits(const Stage& s, uint32_t d) const { return s.memory <= memory_[d]; }
  // The lower-bound parts of stage(): compute and the memory of parameters and activations alone
  // only grow as i moves left; the searches stop there.
  double compute(std::size_t i, std::size_t j, uint32_t d) const {
    return chain_.ms(i, j) * scale_[d];
  }
  bool static_fits(std::size_t i, std::size_t j, uint32_t d) const;

  // T above, for stages [cuts[s], cuts[s + 1]) on devices[s] (empty stages skipped).
  double estimate(const std::vector<std::size_t>& cuts, const std::vector<uint32_t>& devices) const;

  uint32_t device_count() const { return static_cast<uint32_t>(memory_.size()); }

 private:
  const ChainView& chain_;
  std::vector<double> scale_;
  std::vector<uint64_t> memory_;
  double act_ms_per_element_;   // whole batch, 4 bytes, over the slowest device link
  double hop_ms_;
  double push_ms_per_byte_;
  double push_latency_ms_;
  uint64_t chunk_bytes_;
  Mode mode_;
  uint64_t param_factor_;       // 2 + k
  uint64_t act_bytes_;          // 4 m M
  uint64_t comm_bytes_;         // 8 m
  uint32_t micro_;
};

}  // namespace psrt::placement
