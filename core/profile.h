// Model profiles (bench/profiles/*.yaml): per layer, forward and backward milliseconds and the
// parameter tensors with their element counts. Used by the replay backend and the simulator.
//
//   name: vgg16
//   batch_size: 32            # informational: the batch the times are for
//   device_gflops: 15000      # informational: the throughput the times were derived from
//   scale: 1.0                # default scale; model.scale in the job config overrides it
//   scaled_by: 0.01           # optional (profile_yaml writes it): the sizes and times below
//                             # are already a full-size model's times this; not applied again,
//                             # only recorded (ModelDesc::scale = scale x scaled_by)
//   layers:
//     - name: conv1_1
//       kind: conv2d
//       forward_ms: 1.5
//       backward_ms: 3.0
//       tensors:
//         - {name: conv1_1.weight, elements: 1728}
//         - {name: conv1_1.bias, elements: 64}
//
// `scale` multiplies every parameter tensor's element count and every time, so the ratio of compute
// to parameter traffic stays the same while a run shrinks to fit a small machine; the layers'
// activation_elements are not scaled.
#pragma once

#include <string>

#include "core/model.h"

namespace psrt {

// The smallest scale, given or in the file.
constexpr double kMinProfileScale = 1e-6;

// Throws ConfigError naming the file and key on a bad profile. scale <= 0 keeps the file's own.
ModelDesc load_profile(const std::string& path, double scale = 0);
ModelDesc parse_profile(const std::string& yaml_text, const std::string& where, double scale = 0);
// `model` as a profile (scale 1, scaled_by its ModelDesc::scale when not 1, every layer's inputs
// spelled out): parse_profile gives it back, its scale included.
std::string profile_yaml(const ModelDesc& model);

}  // namespace psrt
