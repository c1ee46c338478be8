// A native network written out layer by layer (model.arch: custom): the engine's layer kinds in
// forward order, each with its shape. Read here so that the config and the engine share one type;
// the engine checks the shapes against the input when it builds the network (engine/custom_net.cc).
//
// In YAML, a list whose entries are a kind alone or a one-kind mapping with its options:
//   relu | flatten | pool                 (pool alone: a 2x2 window, step 2)
//   {conv: OUT, kernel: 3, stride: 1, pad: kernel / 2}
//   {pool: KERNEL, stride: KERNEL}
//   {fc: OUT}
//   {dropout: P}                          (0 <= P <= 0.95; 0 leaves the layer out)
// The softmax cross-entropy loss follows the last entry, which must be an fc with one output per
// class.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace psrt {

class YamlReader;

struct LayerSpec {
  enum class Kind { kConv, kPool, kRelu, kFc, kDropout, kFlatten };
  Kind kind = Kind::kRelu;
  int out = 0;     // conv: output channels; fc: output width
  int kernel = 0;  // conv, pool: the square window
  int stride = 0;  // conv, pool
  int pad = 0;     // conv: zeros on each side
  double p = 0;    // dropout: the probability of dropping a unit

  bool operator==(const LayerSpec&) const = default;
};

inline constexpr std::size_t kMaxLayerSpecs = 1024;

// The list under `key` of `r` (which must be present); a ConfigError naming the entry otherwise.
std::vector<LayerSpec> read_layer_list(const YamlReader& r, const std::string& key);

// One entry as the YAML above writes it, for messages and logs: "{conv: 32, kernel: 3, ...}".
std::string layer_spec_text(const LayerSpec& l);

}  // namespace psrt
