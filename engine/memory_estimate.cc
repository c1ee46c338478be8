#include "engine/memory_estimate.h"

#include <algorithm>

namespace psrt::engine {

uint64_t NetMemory::activation_floats() const {
  uint64_t floats = input_floats;
  for (const LayerDesc& l : desc.layers) floats += l.activation_elements;
  return std::max<uint64_t>(floats, 1);
}

NetMemory net_memory(const ModelDesc& desc, const NetSpec& spec) {
  return {desc, uint64_t(spec.channels) * uint64_t(spec.height) * uint64_t(spec.width)};
}

int eval_batch(const NetMemory& net, int largest) {
  const uint64_t per_sample = net.activation_floats() * sizeof(float);
  return int(std::clamp<uint64_t>(kEvalBytes / per_sample, 1, uint64_t(std::max(largest, 1))));
}

uint64_t least_memory_bytes(const NetMemory& net, int batch, bool evaluates, int largest_eval) {
  const uint64_t per_sample = net.activation_floats() * sizeof(float);
  uint64_t bytes = net.desc.total_bytes() * 2;  // the values and their gradients
  bytes += per_sample * 2 * uint64_t(batch);    // activations and their gradients
  if (evaluates) bytes += per_sample * uint64_t(eval_batch(net, largest_eval));
  return bytes;
}

std::string memory_problem(const NetMemory& net, int batch, bool evaluates, int largest_eval,
                           int copies, uint64_t available) {
  const ModelDesc& desc = net.desc;
  const uint64_t need = least_memory_bytes(net, batch, false, largest_eval) * uint64_t(copies) +
                        (evaluates ? least_memory_bytes(net, 0, true, largest_eval) -
                                         least_memory_bytes(net, 0, false, largest_eval)
                                   : 0);
  if (available == 0 || need <= available) return "";
  return "model: the network " + desc.name + " needs at least " + std::to_string(need >> 20) +
         " MiB" + (copies > 1 ? " for its " + std::to_string(copies) + " workers" : "") + " (" +
         std::to_string(desc.total_elements()) + " parameters with their gradients, " +
         std::to_string(net.activation_floats()) + " floats of activations per sample with " +
         "their gradients at job.batch_size " + std::to_string(batch) + "), over the " +
         std::to_string(available >> 20) + " MiB this machine has available (80%): make the " +
         "network (model.layers, model.hidden) or job.batch_size smaller";
}

}  // namespace psrt::engine
