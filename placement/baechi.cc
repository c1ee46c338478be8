// Baechi's memory-constrained list schedulers (Jeon et al., "Baechi: Fast Device Placement of
// Machine Learning Graphs", SoCC 2020): m-ETF (earliest task first) and m-SCT (small communication
// times: a favourite child goes where its parent is when that does not delay it). Operators are
// the layers with their forward + backward time (Baechi co-places an operator's backward with its
// forward); an operator may only go to a device with room for its parameters, gradients, optimizer
// state and activations. Baechi's SCT picks favourite children from an LP relaxation; here the
// favourite child of a layer is its consumer with the largest transfer (the LP's usual outcome on
// chains and trees).
#include <algorithm>
#include <limits>

#include "placement/baselines.h"

namespace psrt::placement {

namespace {

struct ListScheduler {
  const Problem& p;
  std::vector<std::vector<uint32_t>> consumers;
  std::vector<uint32_t> device_of;
  std::vector<double> finish, device_free;
  std::vector<uint64_t> room;
  double per_element;  // transfer ms per activation element (whole batch)

  explicit ListScheduler(const Problem& problem) : p(problem) {
    const auto n = p.model.layers.size();
    consumers.resize(n);
    for (uint32_t l = 0; l < n; ++l) {
      for (uint32_t u : p.model.layers[l].inputs) consumers[u].push_back(l);
    }
    device_of.assign(n, UINT32_MAX);
    finish.assign(n, 0);
    device_free.assign(p.devices.devices.size(), 0);
    for (const auto& d : p.devices.devices) room.push_back(d.memory_bytes);
    per_element = 4.0 * p.setup.batch_size / p.devices.slowest().bytes_per_s * 1e3;
  }

  uint64_t need(uint32_t l) const {
    uint64_t params = 0;
    for (uint32_t key : p.model.layers[l].tensors) params += 4 * p.model.tensors[key].num_elements;
    return (2 + optimizer_state_copies(p.setup.optimizer)) * params +
           4ull * p.setup.micro_batch_size() * p.setup.micro_batches *
               p.model.layers[l].activation_elements;
  }

  double start_on(uint32_t l, uint32_t d) const {
    double t = device_free[d];
    for (uint32_t u : p.model.layers[l].inputs) {
      const double comm =
          device_of[u] == d ? 0 : per_element * p.model.layers[u].activation_elements;
      t = std::max(t, finish[u] + comm);
    }
    return t;
  }

  void put(uint32_t l, uint32_t d, double start) {
    device_of[l] = d;
    finish[l] = start + layer_ms(p.model, l, p.devices.devices[d]);
    device_free[d] = finish[l];
    room[d] -= need(l);
  }

  // Earliest-start (layer, device) among the ready layers; with `sct`, a favourite child prefers
  // its parent's device when it can start there no later than anywhere else plus the transfer.
  Assignment run(bool sct) {
    const auto n = static_cast<uint32_t>(p.model.layers.size());
    std::vector<uint32_t> pending(n), favourite_parent(n, UINT32_MAX);
    for (uint32_t l = 0; l < n; ++l)
      pending[l] = static_cast<uint32_t>(p.model.layers[l].inputs.size());
    for (uint32_t u = 0; u < n; ++u) {
      uint32_t fav = UINT32_MAX;
      for (uint32_t v : consumers[u]) {
        if (fav == UINT32_MAX || p.model.layers[v].activation_elements >
                                     p.model.layers[fav].activation_elements) {
          fav = v;
        }
      }
      if (fav != UINT32_MAX) favourite_parent[fav] = u;
    }
    std::vector<uint32_t> ready;
    for (uint32_t l = 0; l < n; ++l) {
      if (pending[l] == 0) ready.push_back(l);
    }
    for (uint32_t placed = 0; placed < n; ++placed) {
      double best = std::numeric_limits<double>::infinity();
      uint32_t bl = 0, bd = 0;
      std::size_t bi = 0;
      for (std::size_t r = 0; r < ready.size(); ++r) {
        const uint32_t l = ready[r];
        const uint64_t want = need(l);
        for (uint32_t d = 0; d < device_free.size(); ++d) {
          if (room[d] < want) continue;
          double t = start_on(l, d);
          if (sct && favourite_parent[l] != UINT32_MAX && device_of[favourite_parent[l]] == d) {
            t -= per_element * p.model.layers[favourite_parent[l]].activation_elements;
          }
          if (t < best) best = t, bl = l, bd = d, bi = r;
        }
      }
      if (best == std::numeric_limits<double>::infinity()) {
        return Status::error("layer '" + p.model.layers[ready.empty() ? 0 : ready[0]].name +
                             "' fits on no device's remaining memory (" +
                             std::to_string(need(ready.empty() ? 0 : ready[0])) + " bytes)");
      }
      put(bl, bd, start_on(bl, bd));
      ready.erase(ready.begin() + static_cast<std::ptrdiff_t>(bi));
      for (uint32_t v : consumers[bl]) {
        if (--pending[v] == 0) ready.push_back(v);
      }
    }
    return device_of;
  }
};

}  // namespace

Assignment baechi_metf(const Problem& p) { return ListScheduler(p).run(false); }
Assignment baechi_msct(const Problem& p) { return ListScheduler(p).run(true); }

}  // namespace psrt::placement
