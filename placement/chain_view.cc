#include "placement/chain_view.h"

namespace psrt::placement {

ChainView::ChainView(const ModelDesc& model) : order(topological_order(model, model.name)) {
  const std::size_t n = order.size();
  std::vector<std::size_t> pos(n);
  for (std::size_t p = 0; p < n; ++p) pos[order[p]] = p;
  ms_prefix.assign(n + 1, 0);
  fwd_prefix.assign(n + 1, 0);
  param_prefix.assign(n + 1, 0);
  act_prefix.assign(n + 1, 0);
  std::vector<std::size_t> last_use(n, 0);  // last position reading each position's output
  for (std::size_t p = 0; p < n; ++p) {
    const auto& l = model.layers[order[p]];
    uint64_t bytes = 0;
    for (uint32_t key : l.tensors) bytes += 4 * model.tensors[key].num_elements;
    ms_prefix[p + 1] = ms_prefix[p] + l.forward_ms + l.backward_ms;
    fwd_prefix[p + 1] = fwd_prefix[p] + l.forward_ms;
    param_prefix[p + 1] = param_prefix[p] + bytes;
    act_prefix[p + 1] = act_prefix[p] + l.activation_elements;
    for (uint32_t in : l.inputs) last_use[pos[in]] = std::max(last_use[pos[in]], p);
  }
  // Output of position u crosses every cut i with u < i <= last_use[u].
  std::vector<int64_t> diff(n + 2, 0);
  for (std::size_t u = 0; u < n; ++u) {
    if (last_use[u] <= u) continue;
    const auto a = static_cast<int64_t>(model.layers[order[u]].activation_elements);
    diff[u + 1] += a;
    diff[last_use[u] + 1] -= a;
  }
  cross.assign(n + 1, 0);
  int64_t run = 0;
  for (std::size_t i = 0; i <= n; ++i) {
    run += diff[i];
    cross[i] = static_cast<uint64_t>(run);
  }
}

std::vector<uint32_t> ChainView::assignment(const std::vector<std::size_t>& cuts,
                                            const std::vector<uint32_t>& stage_device) const {
  std::vector<uint32_t> device_of_layer(order.size(), 0);
  for (std::size_t s = 0; s + 1 < cuts.size(); ++s) {
    for (std::size_t p = cuts[s]; p < cuts[s + 1]; ++p) device_of_layer[order[p]] = stage_device[s];
  }
  return device_of_layer;
}

}  // namespace psrt::placement
