#include "core/plan.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "core/status.h"

namespace psrt {

Link DeviceSet::slowest() const {
  Link worst = link;
  for (std::size_t a = 0; a < pair.size(); ++a) {
    for (std::size_t b = 0; b < pair[a].size(); ++b) {
      if (a != b && pair[a][b].bytes_per_s < worst.bytes_per_s) worst = pair[a][b];
    }
  }
  return worst;
}

const char* optimizer_name(OptimizerKind o) {
  switch (o) {
    case OptimizerKind::kSgd: return "sgd";
    case OptimizerKind::kMomentum: return "momentum";
    case OptimizerKind::kAdam: return "adam";
  }
  return "?";
}

OptimizerKind parse_optimizer(const std::string& name, const std::string& key) {
  for (OptimizerKind o : {OptimizerKind::kSgd, OptimizerKind::kMomentum, OptimizerKind::kAdam}) {
    if (name == optimizer_name(o)) return o;
  }
  throw ConfigError(key + ": '" + name + "' is not one of: sgd, momentum, adam");
}

uint32_t optimizer_state_copies(OptimizerKind o) {
  return o == OptimizerKind::kSgd ? 0 : o == OptimizerKind::kMomentum ? 1 : 2;
}

std::vector<MemoryUse> memory_use(const ModelDesc& model,
                                  const std::vector<uint32_t>& device_of_layer, uint32_t devices,
                                  const TrainingSetup& setup) {
  std::vector<MemoryUse> use(devices);
  const uint64_t m = setup.micro_batch_size();
  const uint64_t k = optimizer_state_copies(setup.optimizer);
  // cross[d]: activation elements per sample of the distinct layers whose outputs cross into or
  // out of d.
  std::vector<std::set<uint32_t>> crossing(devices);
  for (uint32_t l = 0; l < model.layers.size(); ++l) {
    const uint32_t d = device_of_layer[l];
    uint64_t params = 0;
    for (uint32_t key : model.layers[l].tensors)
      params = sat_add(params, sat_mul(model.tensors[key].num_elements, 4));
    use[d].params = sat_add(use[d].params, params);
    use[d].gradients = sat_add(use[d].gradients, params);
    use[d].optimizer = sat_add(use[d].optimizer, sat_mul(k, params));
    use[d].activations =
        sat_add(use[d].activations, sat_mul(sat_mul(4 * m, setup.micro_batches),
                                            model.layers[l].activation_elements));
    for (uint32_t in : model.layers[l].inputs) {
      const uint32_t from = device_of_layer[in];
      if (from == d) continue;
      crossing[d].insert(in);     // d receives it
      crossing[from].insert(in);  // `from` sends it
    }
  }
  for (uint32_t d = 0; d < devices; ++d) {
    uint64_t elements = 0;
    for (uint32_t l : crossing[d]) elements = sat_add(elements, model.layers[l].activation_elements);
    use[d].comm_buffers = sat_mul(2 * 4 * m, elements);
  }
  return use;
}

double compute_scale(const ModelDesc& model, const Device& device) {
  return model.device_gflops > 0 && device.gflops > 0 ? model.device_gflops / device.gflops : 1.0;
}

double layer_ms(const ModelDesc& model, uint32_t layer, const Device& device) {
  const auto& l = model.layers[layer];
  return (l.forward_ms + l.backward_ms) * compute_scale(model, device);
}

uint64_t cut_bytes(const ModelDesc& model, const std::vector<uint32_t>& device_of_layer,
                   uint32_t batch_size) {
  uint64_t elements = 0;
  std::set<std::pair<uint32_t, uint32_t>> sent;  // (producer, consuming device)
  for (uint32_t l = 0; l < model.layers.size(); ++l) {
    for (uint32_t in : model.layers[l].inputs) {
      if (device_of_layer[in] != device_of_layer[l] &&
          sent.emplace(in, device_of_layer[l]).second) {
        elements = sat_add(elements, model.layers[in].activation_elements);
      }
    }
  }
  return sat_mul(sat_mul(2 * 4, elements), batch_size);
}

std::string memory_violation(const std::vector<MemoryUse>& use, const DeviceSet& devices) {
  for (std::size_t d = 0; d < use.size() && d < devices.devices.size(); ++d) {
    const uint64_t need = use[d].total();
    const uint64_t have = devices.devices[d].memory_bytes;
    if (need == UINT64_MAX) {
      return "device '" + devices.devices[d].name + "' needs 2^64 bytes or more (the profile's " +
             "activations times the batch), but has " + std::to_string(have);
    }
    if (need > have) {
      char buf[256];
      std::snprintf(buf, sizeof buf,
                    "device '%s' needs %llu bytes but has %llu (%llu bytes missing, %.2f GB)",
                    devices.devices[d].name.c_str(), static_cast<unsigned long long>(need),
                    static_cast<unsigned long long>(have),
                    static_cast<unsigned long long>(need - have),
                    static_cast<double>(need - have) / 1e9);
      return buf;
    }
  }
  return "";
}

}  // namespace psrt
