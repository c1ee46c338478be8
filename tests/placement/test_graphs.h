// Small graphs and device sets for the placement tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/plan.h"

namespace psrt::test_graphs {

struct Spec {
  uint64_t params;       // parameter elements (0: none)
  uint64_t activations;  // output elements per sample
  double ms;             // forward + backward (split 1:2)
};

// A chain; layer i is named "l<i>".
inline ModelDesc chain(const std::vector<Spec>& specs) {
  ModelDesc m;
  m.name = "test";
  for (std::size_t i = 0; i < specs.size(); ++i) {
    LayerDesc l;
    l.name = "l";
    l.name += std::to_string(i);
    l.forward_ms = specs[i].ms / 3;
    l.backward_ms = specs[i].ms * 2 / 3;
    l.activation_elements = specs[i].activations;
    std::vector<std::pair<std::string, uint64_t>> t;
    if (specs[i].params) t.emplace_back(l.name + ".w", specs[i].params);
    m.add_layer(l, t);
  }
  return m;
}

inline DeviceSet devices(std::size_t n, uint64_t memory, double gflops,
                         double bytes_per_s = 1e9) {
  DeviceSet set;
  for (std::size_t d = 0; d < n; ++d) {
    std::string name = "d";  // (not "d" + ...: GCC 12 warns falsely under -Wrestrict)
    name += std::to_string(d);
    set.devices.push_back({name, memory, gflops});
  }
  set.link.bytes_per_s = bytes_per_s;
  set.server_link.bytes_per_s = bytes_per_s;
  return set;
}

}  // namespace psrt::test_graphs
