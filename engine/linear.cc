#include "engine/linear.h"

#include <cblas.h>

#include <algorithm>

#include "engine/init.h"

namespace psrt::engine {

Linear::Linear(std::string name, std::size_t in, std::size_t out, LinearInit init)
    : Layer(std::move(name)), in_(in), out_(out), init_(init), p_(in * out, out) {}

double Linear::forward_flops() const {
  return 2.0 * static_cast<double>(in_) * static_cast<double>(out_) + static_cast<double>(out_);
}

std::vector<ParamSlot> Linear::params() {
  return p_.slots();
}

void Linear::init_params(uint64_t seed) {
  if (init_ == LinearInit::kHeNormal) {
    fill_he_normal(p_.w(), in_, seed);
  } else {
    fill_xavier_uniform(p_.w(), in_, out_, seed);
  }
  std::fill(p_.b().begin(), p_.b().end(), 0.0f);
}

void Linear::forward(const float* in, float* out, int n, bool /*training*/) {
  if (n <= 0) return;
  const std::vector<float>& b = p_.b();
  for (int r = 0; r < n; ++r) std::copy(b.begin(), b.end(), out + r * out_);
  // out[n, out] = in[n, in] * W^T[in, out] + out
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, static_cast<int>(out_),
              static_cast<int>(in_), 1.0f, in, static_cast<int>(in_), p_.w().data(),
              static_cast<int>(in_), 1.0f, out, static_cast<int>(out_));
}

void Linear::backward(const float* in, const float* /*out*/, const float* dout, float* din, int n) {
  const int ni = static_cast<int>(in_), no = static_cast<int>(out_);
  if (n <= 0) {
    std::fill(p_.dw().begin(), p_.dw().end(), 0.0f);
    std::fill(p_.db().begin(), p_.db().end(), 0.0f);
    return;
  }
  // dW[out, in] = dout^T[out, n] * in[n, in]
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, no, ni, n, 1.0f, dout, no, in, ni, 0.0f,
              p_.dw().data(), ni);
  // db = column sums of dout
  std::vector<float>& db = p_.db();
  std::fill(db.begin(), db.end(), 0.0f);
  for (int r = 0; r < n; ++r) {
    const float* row = dout + static_cast<std::size_t>(r) * out_;
    for (std::size_t c = 0; c < out_; ++c) db[c] += row[c];
  }
  // din[n, in] = dout[n, out] * W[out, in]
  if (din != nullptr) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, ni, no, 1.0f, dout, no, p_.w().data(),
                ni, 0.0f, din, ni);
  }
}

}  // namespace psrt::engine
