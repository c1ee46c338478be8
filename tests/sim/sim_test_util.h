// Small hand-built models for the simulator's tests.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/model.h"

namespace psrt::sim::test {

struct LayerSpec {
  double forward_ms;
  double backward_ms;
  std::vector<uint64_t> tensor_elements;
};

inline ModelDesc make_model(const std::vector<LayerSpec>& specs) {
  ModelDesc m;
  m.name = "hand";
  for (std::size_t i = 0; i < specs.size(); ++i) {
    LayerDesc l;
    l.name = "l";  // appended, not "l" + ...: GCC 12's -Wrestrict misfires on operator+
    l.name += std::to_string(i);
    l.kind = "linear";
    l.forward_ms = specs[i].forward_ms;
    l.backward_ms = specs[i].backward_ms;
    std::vector<std::pair<std::string, uint64_t>> tensors;
    for (std::size_t j = 0; j < specs[i].tensor_elements.size(); ++j) {
      std::string name = l.name;
      name += ".t";
      name += std::to_string(j);
      tensors.emplace_back(name, specs[i].tensor_elements[j]);
    }
    m.add_layer(l, tensors);
  }
  return m;
}

// 4096-byte chunks (1024 fp32 elements) take exactly 1 ms at this bandwidth.
constexpr double kOneChunkPerMs = 4096000.0;

}  // namespace psrt::sim::test
