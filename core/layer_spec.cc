#include "core/layer_spec.h"

#include <array>
#include <utility>

#include "core/yaml_reader.h"

namespace psrt {
namespace {

using Kind = LayerSpec::Kind;

constexpr std::array<std::pair<const char*, Kind>, 6> kKinds = {{{"conv", Kind::kConv},
                                                                 {"pool", Kind::kPool},
                                                                 {"relu", Kind::kRelu},
                                                                 {"fc", Kind::kFc},
                                                                 {"dropout", Kind::kDropout},
                                                                 {"flatten", Kind::kFlatten}}};
constexpr int kMaxWidth = 1 << 16;   // conv channels, fc outputs
constexpr int kMaxWindow = 1 << 10;  // kernel, stride, pad

const char* kind_name(Kind k) {
  for (const auto& [name, kind] : kKinds) {
    if (kind == k) return name;
  }
  return "?";
}

// A bare kind: relu, flatten, or pool with its defaults.
LayerSpec read_bare(const YamlReader& list, const std::string& at, const YAML::Node& entry) {
  const std::string name = entry.Scalar();
  if (name == "relu") return {.kind = Kind::kRelu};
  if (name == "flatten") return {.kind = Kind::kFlatten};
  if (name == "pool") return {.kind = Kind::kPool, .kernel = 2, .stride = 2};
  list.fail(at, "'" + name.substr(0, 64) +
                    "' is no layer: relu, flatten or pool alone, or a mapping such as "
                    "{conv: 32}, {pool: 2}, {fc: 128}, {dropout: 0.5}");
}

// A one-kind mapping with its options; unknown options are refused.
LayerSpec read_mapping(const YamlReader& list, const std::string& at, const YAML::Node& entry) {
  const YamlReader e(entry, list.full(at), list.where());
  std::vector<Kind> found;
  for (const auto& [name, kind] : kKinds) {
    if (entry[name]) found.push_back(kind);  // present, even without a value (`- relu:`)
  }
  if (found.size() != 1) {
    list.fail(at, "needs exactly one of conv, pool, relu, fc, dropout, flatten (found " +
                      std::to_string(found.size()) + ")");
  }
  LayerSpec l{.kind = found[0]};
  switch (l.kind) {
    case Kind::kConv:
      l.out = int(e.get_int("conv", 1, 1, kMaxWidth));
      l.kernel = int(e.get_int("kernel", 3, 1, kMaxWindow));
      l.stride = int(e.get_int("stride", 1, 1, kMaxWindow));
      l.pad = int(e.get_int("pad", l.kernel / 2, 0, kMaxWindow));
      break;
    case Kind::kPool:
      l.kernel = int(e.get_int("pool", 2, 1, kMaxWindow));
      l.stride = int(e.get_int("stride", l.kernel, 1, kMaxWindow));
      break;
    case Kind::kFc:
      l.out = int(e.get_int("fc", 1, 1, kMaxWidth));
      break;
    case Kind::kDropout:
      l.p = e.get_double("dropout", 0, 0, 0.95);
      break;
    case Kind::kRelu:
    case Kind::kFlatten: {
      const std::string name = kind_name(l.kind);
      e.mark_used(name);  // `relu: ~` and the like: the kind alone
      if (const YAML::Node v = e.node()[name]; v && !v.IsNull()) {
        e.fail(name, "takes no value (write " + name + " alone)");  // {relu: 5} meant nothing
      }
      break;
    }
  }
  e.reject_unknown();
  return l;
}

}  // namespace

std::vector<LayerSpec> read_layer_list(const YamlReader& r, const std::string& key) {
  r.mark_used(key);
  const YAML::Node list = r.node()[key];
  if (!list || !list.IsSequence() || list.size() == 0) {
    r.fail(key, "must be a non-empty list of layers, e.g. [{conv: 32}, relu, pool, {fc: 10}]");
  }
  if (list.size() > kMaxLayerSpecs) {
    r.fail(key, std::to_string(list.size()) + " layers; at most " + std::to_string(kMaxLayerSpecs) +
                    " allowed");
  }
  std::vector<LayerSpec> out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string at = key + "[" + std::to_string(i) + "]";
    if (list[i].IsScalar()) {
      out.push_back(read_bare(r, at, list[i]));
    } else if (list[i].IsMap()) {
      out.push_back(read_mapping(r, at, list[i]));
    } else {
      r.fail(at, "must be a layer kind or a mapping such as {conv: 32}");
    }
  }
  return out;
}

std::string layer_spec_text(const LayerSpec& l) {
  const std::string kind = kind_name(l.kind);
  switch (l.kind) {
    case Kind::kConv:
      return "{conv: " + std::to_string(l.out) + ", kernel: " + std::to_string(l.kernel) +
             ", stride: " + std::to_string(l.stride) + ", pad: " + std::to_string(l.pad) + "}";
    case Kind::kPool:
      return "{pool: " + std::to_string(l.kernel) + ", stride: " + std::to_string(l.stride) + "}";
    case Kind::kFc:
      return "{fc: " + std::to_string(l.out) + "}";
    case Kind::kDropout: {
      std::string p = std::to_string(l.p);
      while (p.size() > 3 && p.back() == '0') p.pop_back();
      return "{dropout: " + p + "}";
    }
    case Kind::kRelu:
    case Kind::kFlatten:
      break;
  }
  return kind;
}

}  // namespace psrt
