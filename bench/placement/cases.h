// The benchmark's models, device sets and synthetic graphs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/plan.h"

namespace psrt::bench {

// Profiles from bench/profiles (vgg16, resnet50, inception_v3, gnmt, lenet5) or the native
// engine's networks ("vgg-small", "lenet5-native"), times from FLOPs at batch 32 on 10 TFLOPS.
ModelDesc load_model(const std::string& name, const std::string& profile_dir);

// k devices of `memory` bytes and 10,000 GFLOPS; heterogeneous: the second half with half of
// each. Links 100 Gbit/s (10 us) between devices and to the servers.
DeviceSet make_devices(uint32_t k, bool heterogeneous, uint64_t memory);

// A random DAG of n layers (seeded): each reads the previous layer and, with probability 0.3,
// one of the 16 before it; times 0.1-2 ms, 0-2 M parameters, 1 k - 1 M activation elements.
ModelDesc synthetic_dag(uint32_t n, uint64_t seed);

}  // namespace psrt::bench
