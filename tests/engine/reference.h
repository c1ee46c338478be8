// Double-precision reference implementations for the engine tests.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace psrt::engine::testing {

using Vec = std::vector<double>;

// y[n, out] = x[n, in] W^T + b, W [out, in].
inline Vec linear_ref(const Vec& x, const Vec& w, const Vec& b, int n, int in, int out) {
  Vec y(static_cast<std::size_t>(n * out));
  for (int r = 0; r < n; ++r) {
    for (int o = 0; o < out; ++o) {
      double s = b[o];
      for (int i = 0; i < in; ++i) s += x[r * in + i] * w[o * in + i];
      y[r * out + o] = s;
    }
  }
  return y;
}

inline Vec relu_ref(Vec x) {
  for (double& v : x) v = std::max(v, 0.0);
  return x;
}

// Mean softmax cross-entropy of logits z[n, k].
inline double xent_ref(const Vec& z, const std::vector<int32_t>& labels, int n, int k) {
  double total = 0;
  for (int r = 0; r < n; ++r) {
    const double* row = z.data() + r * k;
    const double m = *std::max_element(row, row + k);
    double s = 0;
    for (int c = 0; c < k; ++c) s += std::exp(row[c] - m);
    total += std::log(s) + m - row[labels[r]];
  }
  return total / n;
}

// Central differences of f at v, in double.
template <typename F>
Vec numeric_grad(Vec& v, F&& f, double eps) {
  Vec g(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    const double keep = v[i];
    v[i] = keep + eps;
    const double up = f();
    v[i] = keep - eps;
    const double down = f();
    v[i] = keep;
    g[i] = (up - down) / (2 * eps);
  }
  return g;
}

// ||a - b|| / max(||a||, ||b||): the relative error of two gradients.
template <typename A, typename B>
double rel_error(const A& a, const B& b) {
  double diff = 0, na = 0, nb = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double x = static_cast<double>(a[i]), y = static_cast<double>(b[i]);
    diff += (x - y) * (x - y);
    na += x * x;
    nb += y * y;
  }
  const double scale = std::sqrt(std::max(na, nb));
  return scale == 0 ? std::sqrt(diff) : std::sqrt(diff) / scale;
}

inline Vec random_vec(std::size_t size, std::mt19937_64& gen, double lo = -1, double hi = 1) {
  Vec v(size);
  // Own transform of the engine's output (not std::uniform_real_distribution): reproducible.
  for (double& x : v) x = lo + (hi - lo) * static_cast<double>(gen() >> 11) * 0x1.0p-53;
  return v;
}

// Rounds to float and back, so that the double reference sees exactly what the engine sees.
inline Vec as_float_values(Vec v) {
  for (double& x : v) x = static_cast<double>(static_cast<float>(x));
  return v;
}

inline std::vector<float> to_float(const Vec& v) {
  return std::vector<float>(v.begin(), v.end());
}

}  // namespace psrt::engine::testing
