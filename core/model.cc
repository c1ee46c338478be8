#include "core/model.h"

#include <queue>

#include "core/status.h"

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
  if (layer.inputs.empty() && !layer.reads_input) {
    if (layer_index == 0) {
      layer.reads_input = true;
    } else {
      layer.inputs.push_back(layer_index - 1);
    }
  }
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

void set_times_from_flops(ModelDesc& model, uint32_t batch, double gflops) {
  model.batch_size = batch;
  model.device_gflops = gflops;
  for (auto& l : model.layers) {
    l.forward_ms = l.forward_flops * batch / (gflops * 1e9) * 1e3;
    l.backward_ms = 2 * l.forward_ms;
  }
}

std::vector<uint32_t> topological_order(const ModelDesc& model, const std::string& where) {
  const std::size_t n = model.layers.size();
  std::vector<uint32_t> pending(n, 0);
  std::vector<std::vector<uint32_t>> consumers(n);
  for (std::size_t i = 0; i < n; ++i) {
    for (uint32_t in : model.layers[i].inputs) {
      if (in >= n || in == i) {
        throw ConfigError(where + ": layer '" + model.layers[i].name + "': input " +
                          (in == i ? "is the layer itself" : std::to_string(in) + " out of range"));
      }
      ++pending[i];
      consumers[in].push_back(static_cast<uint32_t>(i));
    }
  }
  std::priority_queue<uint32_t, std::vector<uint32_t>, std::greater<>> ready;
  for (std::size_t i = 0; i < n; ++i) {
    if (pending[i] == 0) ready.push(static_cast<uint32_t>(i));
  }
  std::vector<uint32_t> order;
  order.reserve(n);
  while (!ready.empty()) {
    const uint32_t u = ready.top();
    ready.pop();
    order.push_back(u);
    for (uint32_t v : consumers[u]) {
      if (--pending[v] == 0) ready.push(v);
    }
  }
  if (order.size() != n) {
    for (std::size_t i = 0; i < n; ++i) {
      if (pending[i] != 0) {
        throw ConfigError(where + ": layer '" + model.layers[i].name +
                          "' is on a cycle of inputs (or reads from one)");
      }
    }
  }
  return order;
}

}  // namespace psrt
