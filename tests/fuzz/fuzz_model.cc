// libFuzzer: a model profile (what --profile, model.profile and psrt-sim read) and a plan file for
// it (placement.plan, psrt-sim --placement) through parse_profile and plan_from_yaml. Each must
// reject with a ConfigError that says why, or give what it promises: an acyclic profile that
// profile_yaml writes and parse_profile reads back the same; a plan that maps every layer of the
// model to one of its devices.
//
// Input: the profile's text, then optionally a line "---plan---" and the plan's text.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/plan_yaml.h"
#include "core/profile.h"
#include "core/status.h"

namespace {

bool same(const psrt::ModelDesc& a, const psrt::ModelDesc& b) {
  if (a.name != b.name || a.layers.size() != b.layers.size() ||
      a.tensors.size() != b.tensors.size() || a.scale != b.scale) {
    return false;
  }
  for (std::size_t i = 0; i < a.layers.size(); ++i) {
    if (a.layers[i].name != b.layers[i].name || a.layers[i].inputs != b.layers[i].inputs) {
      return false;
    }
  }
  for (std::size_t k = 0; k < a.tensors.size(); ++k) {
    if (a.tensors[k].name != b.tensors[k].name ||
        a.tensors[k].num_elements != b.tensors[k].num_elements) {
      return false;
    }
  }
  return true;
}

void check_plan(const std::string& text, const psrt::ModelDesc& model) {
  try {
    const psrt::Plan plan = psrt::plan_from_yaml(text, "fuzz-plan.yaml", model);
    if (plan.device_of_layer.size() != model.layers.size()) __builtin_trap();
    for (const uint32_t d : plan.device_of_layer) {
      if (d >= plan.devices.devices.size()) __builtin_trap();
    }
  } catch (const psrt::ConfigError& e) {
    if (std::string(e.what()).empty()) __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const auto cut = input.find("\n---plan---\n");
  const std::string profile = input.substr(0, cut);
  psrt::ModelDesc model;
  try {
    model = psrt::parse_profile(profile, "fuzz-profile.yaml");
  } catch (const psrt::ConfigError& e) {
    if (std::string(e.what()).empty()) __builtin_trap();
    return 0;
  }
  (void)psrt::topological_order(model, "accepted");  // throws (uncaught: a crash) on a cycle
  if (!same(model, psrt::parse_profile(psrt::profile_yaml(model), "round trip"))) __builtin_trap();
  if (cut != std::string::npos) check_plan(input.substr(cut + 12), model);
  return 0;
}
