#include "core/model.h"

namespace psrt {

uint64_t ModelDesc::total_elements() const {
  uint64_t n = 0;
  for (const auto& t : tensors) n += t.num_elements;
  return n;
}

double ModelDesc::compute_ms() const {
  double ms = 0;
  for (const auto& l : layers) ms += l.forward_ms + l.backward_ms;
  return ms;
}

uint32_t ModelDesc::add_layer(LayerDesc layer,
                              const std::vector<std::pair<std::string, uint64_t>>& tensor_list) {
  const auto layer_index = static_cast<uint32_t>(layers.size());
  layer.tensors.clear();
  for (const auto& [tensor_name, count] : tensor_list) {
    TensorDesc t;
    t.key = static_cast<uint32_t>(tensors.size());
    t.name = tensor_name;
    t.num_elements = count;
    t.layer = layer_index;
    layer.tensors.push_back(t.key);
    tensors.push_back(std::move(t));
  }
  layers.push_back(std::move(layer));
  return layer_index;
}

}  // namespace psrt
