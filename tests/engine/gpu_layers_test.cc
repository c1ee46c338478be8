// [gpu] The CUDA layers against the CPU layers on seeded input: forward outputs and every gradient.
// Reports itself skipped (gpu_test_util.h) where cudaGetDeviceCount fails or finds no device.
#include <catch2/catch.hpp>

#include <random>
#include <vector>

#include "tests/engine/gpu_test_util.h"
#include "tests/engine/reference.h"
#include "engine/conv2d.h"
#include "engine/cuda/device_buffer.h"
#include "engine/cuda/gpu_layers.h"
#include "engine/dropout.h"
#include "engine/linear.h"
#include "engine/maxpool2d.h"
#include "engine/relu.h"
#include "engine/softmax_xent.h"

using namespace psrt::engine;
using namespace psrt::engine::testing;
namespace gpu = psrt::engine::cuda;

namespace {

constexpr double kTol = 1e-5;

std::vector<float> seeded(std::size_t n, uint64_t seed) {
  std::mt19937_64 gen(seed);
  return to_float(random_vec(n, gen));
}

gpu::DeviceBuffer on_device(std::span<const float> host) {
  gpu::DeviceBuffer b(host.size());
  b.upload(host);
  return b;
}

std::vector<float> on_host(const gpu::DeviceBuffer& b, std::size_t count) {
  std::vector<float> v(count);
  b.download(v);
  return v;
}

// Copies seeded parameters into a CPU layer and returns them, in params() order.
std::vector<std::vector<float>> seed_params(Layer& layer, uint64_t seed) {
  std::vector<std::vector<float>> out;
  for (auto& p : layer.params()) {
    out.push_back(seeded(p.value.size(), seed++));
    std::copy(out.back().begin(), out.back().end(), p.value.begin());
  }
  return out;
}

}  // namespace

TEST_CASE("GPU Linear matches the CPU layer", "[gpu][engine]") {
  if (!have_gpu()) return;
  gpu::GpuContext ctx;
  constexpr int n = 9, in = 37, out = 13;
  Linear cpu("fc", in, out, LinearInit::kHeNormal);
  const auto p = seed_params(cpu, 1);
  const auto x = seeded(n * in, 10), dy = seeded(n * out, 11);
  std::vector<float> y(n * out), dx(n * in);
  cpu.forward(x.data(), y.data(), n, true);
  cpu.backward(x.data(), y.data(), dy.data(), dx.data(), n);

  auto dx_dev = on_device(x), dy_dev = on_device(dy), w = on_device(p[0]), b = on_device(p[1]);
  gpu::DeviceBuffer y_dev(y.size()), dxg(dx.size()), dw(p[0].size()), db(p[1].size());
  gpu::linear_forward(ctx, dx_dev.data(), w.data(), b.data(), y_dev.data(), n, in, out);
  gpu::linear_backward(ctx, dx_dev.data(), dy_dev.data(), w.data(), dxg.data(), dw.data(),
                       db.data(), n, in, out);
  CHECK(rel_error(on_host(y_dev, y.size()), y) < kTol);
  CHECK(rel_error(on_host(dxg, dx.size()), dx) < kTol);
  CHECK(rel_error(on_host(dw, p[0].size()), cpu.params()[0].grad) < kTol);
  CHECK(rel_error(on_host(db, p[1].size()), cpu.params()[1].grad) < kTol);
}

TEST_CASE("GPU Conv2d matches the CPU layer", "[gpu][engine]") {
  if (!have_gpu()) return;
  gpu::GpuContext ctx;
  for (const ConvGeom g : {ConvGeom{1, 28, 28, 6, 5, 1, 2}, ConvGeom{6, 14, 14, 16, 5, 1, 0},
                           ConvGeom{3, 9, 8, 4, 3, 2, 1}, ConvGeom{32, 14, 14, 64, 3, 1, 1}}) {
    INFO("in_c " << g.in_c << " " << g.in_h << "x" << g.in_w << " k " << g.kernel);
    constexpr int n = 5;
    Conv2d cpu("conv", g);
    const auto p = seed_params(cpu, 20);
    const auto x = seeded(n * g.in_size(), 30), dy = seeded(n * g.out_size(), 31);
    std::vector<float> y(n * g.out_size()), dx(x.size());
    cpu.forward(x.data(), y.data(), n, true);
    cpu.backward(x.data(), y.data(), dy.data(), dx.data(), n);

    auto xd = on_device(x), dyd = on_device(dy), w = on_device(p[0]), b = on_device(p[1]);
    gpu::DeviceBuffer yd(y.size()), dxd(dx.size()), dw(p[0].size()), db(p[1].size());
    gpu::DeviceBuffer work(gpu::conv2d_workspace(g, n));
    gpu::conv2d_forward(ctx, g, xd.data(), w.data(), b.data(), yd.data(), n, work.data());
    gpu::conv2d_backward(ctx, g, xd.data(), dyd.data(), w.data(), dxd.data(), dw.data(), db.data(),
                         n, work.data());
    CHECK(rel_error(on_host(yd, y.size()), y) < kTol);
    CHECK(rel_error(on_host(dxd, dx.size()), dx) < kTol);
    CHECK(rel_error(on_host(dw, p[0].size()), cpu.params()[0].grad) < kTol);
    CHECK(rel_error(on_host(db, p[1].size()), cpu.params()[1].grad) < kTol);
  }
}

// The forward the GPU network runs where a ReLU follows: GEMM, then bias and ReLU in one pass.
// (Outputs only: a ReLU input near zero moves an output by rounding, not by a flip's jump.)
TEST_CASE("GPU Linear and Conv2d with the ReLU fused match the CPU layer and ReLU",
          "[gpu][engine]") {
  if (!have_gpu()) return;
  gpu::GpuContext ctx;
  {
    constexpr int n = 9, in = 37, out = 13;
    Linear cpu("fc", in, out, LinearInit::kHeNormal);
    const auto p = seed_params(cpu, 3);
    const auto x = seeded(n * in, 12);
    std::vector<float> pre(n * out), y(n * out);
    cpu.forward(x.data(), pre.data(), n, true);
    Relu relu("relu", out);
    relu.forward(pre.data(), y.data(), n, true);
    auto xd = on_device(x), w = on_device(p[0]), b = on_device(p[1]);
    gpu::DeviceBuffer scratch(pre.size()), yd(y.size());
    gpu::linear_forward_relu(ctx, xd.data(), w.data(), b.data(), scratch.data(), yd.data(), n, in,
                             out);
    CHECK(rel_error(on_host(yd, y.size()), y) < kTol);
  }
  for (const ConvGeom g : {ConvGeom{1, 28, 28, 6, 5, 1, 2}, ConvGeom{3, 9, 8, 4, 3, 2, 1}}) {
    INFO("in_c " << g.in_c << " " << g.in_h << "x" << g.in_w << " k " << g.kernel);
    constexpr int n = 5;
    Conv2d cpu("conv", g);
    const auto p = seed_params(cpu, 23);
    const auto x = seeded(n * g.in_size(), 33);
    std::vector<float> pre(n * g.out_size()), y(pre.size());
    cpu.forward(x.data(), pre.data(), n, true);
    Relu relu("relu", g.out_size());
    relu.forward(pre.data(), y.data(), n, true);
    auto xd = on_device(x), w = on_device(p[0]), b = on_device(p[1]);
    gpu::DeviceBuffer scratch(pre.size()), yd(y.size()), work(gpu::conv2d_workspace(g, n));
    gpu::conv2d_forward_relu(ctx, g, xd.data(), w.data(), b.data(), scratch.data(), yd.data(), n,
                             work.data());
    CHECK(rel_error(on_host(yd, y.size()), y) < kTol);
  }
}

TEST_CASE("GPU ReLU, MaxPool2d and Dropout match the CPU layers", "[gpu][engine]") {
  if (!have_gpu()) return;
  constexpr int n = 4;
  const PoolGeom pg{3, 7, 6, 2, 2};
  MaxPool2d pool("pool", pg);
  Relu relu("relu", pool.in_size());
  Dropout drop("drop", pool.in_size(), 0.5f);
  drop.init_params(5);
  const auto x = seeded(n * pool.in_size(), 40), dy = seeded(n * pool.in_size(), 41);
  const auto dyp = seeded(n * pool.out_size(), 42);
  auto xd = on_device(x), dyd = on_device(dy), dypd = on_device(dyp);
  gpu::DeviceBuffer yd(x.size()), dxd(x.size()), pd(dyp.size());
  std::vector<float> y(x.size()), dx(x.size()), yp(dyp.size());

  relu.forward(x.data(), y.data(), n, true);
  relu.backward(x.data(), y.data(), dy.data(), dx.data(), n);
  gpu::relu_forward(xd.data(), yd.data(), x.size());
  gpu::relu_backward(yd.data(), dyd.data(), dxd.data(), x.size());
  CHECK(on_host(yd, y.size()) == y);
  CHECK(on_host(dxd, dx.size()) == dx);

  pool.forward(x.data(), yp.data(), n, true);
  pool.backward(x.data(), yp.data(), dyp.data(), dx.data(), n);
  gpu::maxpool2d_forward(pg, xd.data(), pd.data(), n);
  gpu::maxpool2d_backward(pg, xd.data(), pd.data(), dypd.data(), dxd.data(), n);
  CHECK(on_host(pd, yp.size()) == yp);
  CHECK(on_host(dxd, dx.size()) == dx);

  drop.forward(x.data(), y.data(), n, true);
  drop.backward(x.data(), y.data(), dy.data(), dx.data(), n);
  gpu::dropout_forward(xd.data(), yd.data(), x.size(), 0.5f, drop.step_seed());
  gpu::dropout_backward(dyd.data(), dxd.data(), x.size(), 0.5f, drop.step_seed());
  CHECK(on_host(yd, y.size()) == y);
  CHECK(on_host(dxd, dx.size()) == dx);
}

TEST_CASE("GPU softmax cross-entropy matches the CPU layer", "[gpu][engine]") {
  if (!have_gpu()) return;
  constexpr int n = 6, k = 10;
  const auto z = seeded(n * k, 50);
  const std::vector<int32_t> labels = {0, 9, 3, 3, 7, 1};
  SoftmaxXent cpu("loss", k);
  cpu.set_labels(labels.data());
  std::vector<float> p(z.size()), dz(z.size());
  cpu.forward(z.data(), p.data(), n, true);
  cpu.backward(z.data(), p.data(), nullptr, dz.data(), n);

  gpu::DeviceLabels ld;
  ld.upload(labels);
  auto zd = on_device(z);
  gpu::DeviceBuffer pd(p.size()), dzd(dz.size()), losses(n);
  const float loss =
      gpu::softmax_xent_forward(zd.data(), ld.data(), pd.data(), losses.data(), n, k);
  gpu::softmax_xent_backward(pd.data(), ld.data(), dzd.data(), n, k);
  CHECK(loss == Approx(cpu.loss()).epsilon(1e-6));
  CHECK(rel_error(on_host(pd, p.size()), p) < kTol);
  CHECK(rel_error(on_host(dzd, dz.size()), dz) < kTol);
}
