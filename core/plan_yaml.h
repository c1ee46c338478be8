// YAML for devices and plans. A plan file is what the runtime executes and psrt-sim prices:
//
//   model: vgg16            # must match the profile's name
//   placer: netplacer
//   batch_size: 32
//   micro_batches: 4
//   optimizer: momentum     # sgd | momentum | adam
//   devices:
//     - {name: gpu0, memory_bytes: 17179869184, gflops: 15000}   # or memory_gib: 16
//   link: {bandwidth_bytes_per_s: 1.25e9, latency_ms: 0.01}      # between any two devices
//   server_link: {bandwidth_bytes_per_s: 1.25e9, latency_ms: 0}  # each device to the servers
//   link_pairs: [{from: gpu0, to: gpu1, bandwidth_bytes_per_s: 5e9, latency_ms: 0}]  # optional
//   stages:                 # pipeline order; a worker builds the layers of its stage, in order
//     - {device: gpu0, layers: [conv1_1, conv1_2, ...]}
//   predicted: {step_ms: 81.2, search_ms: 0.4, cut_bytes: 123, device_compute_ms: [..],
//               device_memory_bytes: [..]}
#pragma once

#include <string>

#include "core/model.h"
#include "core/plan.h"
#include "core/yaml_reader.h"

namespace psrt {

// Reads `devices`, `link`, `server_link` and `link_pairs` from `r` (a mapping). Throws ConfigError
// naming the key.
DeviceSet read_devices(const YamlReader& r);
// The training setup keys; those left out keep `base`.
TrainingSetup read_setup(const YamlReader& r, const TrainingSetup& base = {});

std::string plan_to_yaml(const Plan& plan, const ModelDesc& model);
// Throws ConfigError prefixed by `where` (a layer in no stage or two, an unknown layer or device,
// a model name that is not `model`'s).
Plan plan_from_yaml(const std::string& text, const std::string& where, const ModelDesc& model);
Plan load_plan(const std::string& path, const ModelDesc& model);

// The stages of a plan: devices in pipeline order (by their first layer in topological order),
// each with its layers in topological order.
struct Stage {
  uint32_t device = 0;
  std::vector<uint32_t> layers;
};
std::vector<Stage> plan_stages(const ModelDesc& model,
                               const std::vector<uint32_t>& device_of_layer);

}  // namespace psrt
