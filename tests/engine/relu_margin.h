// How close to zero the inputs of a network's ReLUs come for a batch: the smallest |z| over every
// ReLU input z, relative to the RMS of that ReLU's inputs. Two correct implementations that sum
// in different orders (OpenBLAS on the CPU, cuBLAS on the GPU) differ in z by rounding, about
// 2^-24 of the RMS; where some z lies that close to zero, the two may take different sides of the
// ReLU, and every gradient below that layer then differs by far more than rounding (one flipped
// element of conv3 in vgg-small moves the conv1..conv3 gradients by ~0.4%). Tests that compare a
// GPU network with the CPU one check this margin first, on the CPU, so that they compare what is
// comparable. Plain CPU code: runs without a device.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "engine/layer.h"
#include "engine/network.h"

namespace psrt::engine::testing {

// A ReLU input within this fraction of its layer's RMS is too close to call (16x the fp32 rounding
// of two summation orders).
constexpr double kReluMargin = 1e-6;

// The ReLU input closest to zero relative to its layer's RMS: where it is and how close.
struct ReluEdge {
  double margin = std::numeric_limits<double>::infinity();  // |z| / RMS(z); inf: none
  std::size_t layer = 0;  // the layer whose output z is (a ReLU follows it)
  std::size_t index = 0;  // z's place in that output, n x out_size()
  float value = 0;        // z
};

// The smallest |z| / RMS(z) over the inputs z of every ReLU of `net`'s evaluation forward of n
// samples (dropout is the identity there; in vgg-small and the mlp no ReLU follows a dropout).
// Exact zeros are skipped: both sides compute them exactly (zero inputs, zero bias). `spec` and
// `seed` must be those `net` was built from: the forward runs on a network of its own, given net's
// parameters, so that `net` and its state are left untouched.
inline ReluEdge closest_relu_input(const NetSpec& spec, uint64_t seed, const Network& net,
                                   const std::vector<float>& images, int n) {
  auto own = build_network(spec, seed);
  for (const auto& t : net.desc().tensors) {
    const auto from = net.param(t.key);
    std::copy(from.begin(), from.end(), own->param(t.key).begin());
  }
  ReluEdge edge;
  std::vector<float> x(images.begin(), images.end()), y;
  const std::size_t layers = own->desc().layers.size();
  for (std::size_t i = 0; i + 1 < layers; ++i) {
    // Our own network: the const view is all Network gives, the object itself is not const.
    auto& layer = const_cast<Layer&>(own->layer(i));
    y.assign(layer.out_size() * static_cast<std::size_t>(n), 0.0f);
    layer.forward(x.data(), y.data(), n, false);
    if (own->layer(i + 1).kind() == "relu") {
      double sum = 0;
      std::size_t at = y.size();
      for (std::size_t j = 0; j < y.size(); ++j) {
        sum += double{y[j]} * y[j];
        if (y[j] != 0.0f && (at == y.size() || std::fabs(y[j]) < std::fabs(y[at]))) at = j;
      }
      const double rms = std::sqrt(sum / static_cast<double>(y.size()));
      if (rms > 0 && at < y.size() && std::fabs(double{y[at]}) / rms < edge.margin) {
        edge = {std::fabs(double{y[at]}) / rms, i, at, y[at]};
      }
    }
    x.swap(y);
  }
  return edge;
}

// closest_relu_input's margin alone.
inline double relu_margin(const NetSpec& spec, uint64_t seed, const Network& net,
                          const std::vector<float>& images, int n) {
  return closest_relu_input(spec, seed, net, images, n).margin;
}

}  // namespace psrt::engine::testing
