#include "engine/conv2d.h"

#include <cblas.h>

#include <algorithm>

#include "core/status.h"
#include "engine/im2col.h"
#include "engine/init.h"

namespace psrt::engine {
namespace {

const ConvGeom& checked(const std::string& name, const ConvGeom& g) {
  if (!g.valid()) {
    throw ConfigError("conv2d " + name + ": bad geometry (in " + std::to_string(g.in_c) + "x" +
                      std::to_string(g.in_h) + "x" + std::to_string(g.in_w) + ", out_c " +
                      std::to_string(g.out_c) + ", kernel " + std::to_string(g.kernel) +
                      ", stride " + std::to_string(g.stride) + ", pad " + std::to_string(g.pad) +
                      ")");
  }
  return g;
}

}  // namespace

Conv2d::Conv2d(std::string name, const ConvGeom& geom)
    : Layer(std::move(name)),
      g_(checked(this->name(), geom)),
      p_(static_cast<std::size_t>(g_.out_c) * g_.col_rows(), static_cast<std::size_t>(g_.out_c)) {}

double Conv2d::forward_flops() const {
  // A multiply-add per weight per output pixel, plus the bias.
  return (2.0 * static_cast<double>(g_.col_rows()) + 1.0) * static_cast<double>(g_.out_size());
}

std::vector<ParamSlot> Conv2d::params() {
  return p_.slots();
}

void Conv2d::init_params(uint64_t seed) {
  fill_he_normal(p_.w(), g_.col_rows(), seed);
  std::fill(p_.b().begin(), p_.b().end(), 0.0f);
}

void Conv2d::workspace() {
  if (!col_.empty()) return;
  col_.assign(g_.col_rows() * g_.col_cols(), 0.0f);
  ones_.assign(g_.col_cols(), 1.0f);
}

void Conv2d::forward(const float* in, float* out, int n, bool training) {
  workspace();
  const std::vector<float>& b = p_.b();
  const float* w = p_.w().data();
  const int m = g_.out_c, k = static_cast<int>(g_.col_rows()), hw = static_cast<int>(g_.col_cols());
  const std::size_t col_size = col_.size();
  // In training, keep the whole batch's columns for backward when they fit the budget.
  const bool keep =
      training && n > 0 && static_cast<std::size_t>(n) * col_size * sizeof(float) <= kColCacheBytes;
  if (keep) cols_.resize(static_cast<std::size_t>(n) * col_size);
  cached_in_ = keep ? in : nullptr;
  cached_n_ = keep ? n : 0;
  for (int s = 0; s < n; ++s) {
    const float* x = in + static_cast<std::size_t>(s) * g_.in_size();
    float* y = out + static_cast<std::size_t>(s) * g_.out_size();
    for (int o = 0; o < m; ++o) std::fill(y + o * hw, y + (o + 1) * hw, b[o]);
    float* col = keep ? cols_.data() + static_cast<std::size_t>(s) * col_size : col_.data();
    im2col(x, g_, col);
    // y[m, hw] = W[m, k] * col[k, hw] + y
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, hw, k, 1.0f, w, k, col, hw, 1.0f, y,
                hw);
  }
}

void Conv2d::backward(const float* in, const float* /*out*/, const float* dout, float* din, int n) {
  workspace();
  const int m = g_.out_c, k = static_cast<int>(g_.col_rows()), hw = static_cast<int>(g_.col_cols());
  std::vector<float>& dw = p_.dw();
  std::vector<float>& db = p_.db();
  const float* w = p_.w().data();
  std::fill(dw.begin(), dw.end(), 0.0f);
  std::fill(db.begin(), db.end(), 0.0f);
  if (din != nullptr) dcol_.resize(col_.size());
  const bool cached = in == cached_in_ && n == cached_n_;
  for (int s = 0; s < n; ++s) {
    const float* x = in + static_cast<std::size_t>(s) * g_.in_size();
    const float* dy = dout + static_cast<std::size_t>(s) * g_.out_size();
    // db[m] += dy[m, hw] * ones[hw]
    cblas_sgemv(CblasRowMajor, CblasNoTrans, m, hw, 1.0f, dy, hw, ones_.data(), 1, 1.0f, db.data(),
                1);
    const float* col = col_.data();
    if (cached) {
      col = cols_.data() + static_cast<std::size_t>(s) * col_.size();
    } else {
      im2col(x, g_, col_.data());
    }
    // dW[m, k] += dy[m, hw] * col^T[hw, k]
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, k, hw, 1.0f, dy, hw, col, hw, 1.0f,
                dw.data(), k);
    if (din == nullptr) continue;
    // dcol[k, hw] = W^T[k, m] * dy[m, hw]
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, k, hw, m, 1.0f, w, k, dy, hw, 0.0f,
                dcol_.data(), hw);
    float* dx = din + static_cast<std::size_t>(s) * g_.in_size();
    std::fill(dx, dx + g_.in_size(), 0.0f);
    col2im_add(dcol_.data(), g_, dx);
  }
}

}  // namespace psrt::engine
