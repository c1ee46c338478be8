// NetPlacer's closed-form price of a whole plan (a layer-to-device map): what it uses to choose
// among its candidate splits and to refine the best. It never runs the simulator: it works on
// per-stage sums and a handful of offsets, with the structure of GPipe's schedule written as
// max-plus recurrences over (stage, micro-batch):
//
//   stages      the devices that hold layers, ordered by their first layer in the topological
//               order; an activation that flows from a later stage to an earlier one (a cyclic
//               wait) or a device over its memory (core's exact memory model) prices at infinity.
//   compute     f_s, b_s: the stage's forward and backward per micro-batch (device-scaled, / M).
//   transfers   one per (producer layer, consuming device), as the runtime sends them: an
//               activation that skips stages goes once, straight to each device that reads it,
//               not through every cut in between. Each is ready at its producer's offset in the
//               stage (the forward sum up to and including the producer) and needed at its first
//               consumer's offset on the receiving stage; its gradient goes back likewise. Each
//               ordered pair of devices is one FIFO channel (bytes / bandwidth, then latency).
//   a stage     runs its tasks in a fixed order, so its micro-batch m ends at
//               max(previous end, max_i (ready_i - offset_i)) + f_s (exact for a fixed order on
//               one machine): forward of every micro-batch, then backward of every micro-batch.
//   the push    when the last micro-batch's backward of a layer ends its gradients go to the
//               servers on the device's link (bandwidth shared min(1, S / (R x devices used))).
//               Priority modes: gradients are released in reverse forward order, so each later
//               release preempts (at the end of the piece in flight) and an item finishes at the
//               end of the busy period its bytes open, after the busy periods of the releases
//               inside it; FIFO: in order of readiness; bigdl: after the whole backward, in key
//               order. The values come back on the downlink in the order they went up, each
//               item's last piece (chunk or tensor) after its last byte is up and after the
//               reply before it (+ 2 latencies). The next iteration's forward of a layer waits
//               for its values (the same offset rule).
//   the step    three iterations of the above from idle (each device's free time and each
//               channel carried over); the step is the last one's duration (end = the last
//               backward or parameter return), the steady state of the pipeline.
#pragma once

#include <cstdint>
#include <vector>

#include "placement/placer.h"

namespace psrt::placement {

class PipelineModel {
 public:
  explicit PipelineModel(const Problem& problem);

  // The estimated step in ms; infinity when a device is over its memory or the stages would wait
  // on each other in a cycle.
  double step_ms(const std::vector<uint32_t>& device_of_layer) const;

 private:
  struct Layout;
  bool build(const std::vector<uint32_t>& device_of_layer, Layout& layout) const;
  double iterate(const Layout& layout) const;

  const Problem& problem_;
  std::vector<uint32_t> order_;                   // topological order
  std::vector<uint32_t> pos_;                     // layer -> position in order_
  std::vector<std::vector<uint32_t>> consumers_;  // by position, ascending
  std::vector<uint64_t> param_bytes_;             // per layer
  std::vector<double> scale_;                     // per device: compute scale / micro-batches
  uint32_t micro_;
  double act_bytes_per_element_;                  // 4 x micro-batch size
};

}  // namespace psrt::placement
