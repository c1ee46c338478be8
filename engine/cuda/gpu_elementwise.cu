// ReLU, max pooling, dropout and softmax cross-entropy on the GPU.
#include <vector>

#include "engine/cuda/gpu_kernels.h"
#include "engine/cuda/gpu_layers.h"
#include "engine/dropout_mask.h"

namespace psrt::engine::cuda {
namespace {

#define PSRT_GRID_LOOP(i, count)                                           \
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < (count); \
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)

__global__ void relu_fwd(const float* x, float* y, std::size_t count) {
  PSRT_GRID_LOOP(i, count) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

__global__ void relu_bwd(const float* y, const float* dy, float* dx, std::size_t count) {
  PSRT_GRID_LOOP(i, count) dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

// One thread per output: the window's maximum, and for backward the first position holding it.
__device__ std::size_t window_argmax(const float* plane, const PoolGeom& g, int oh, int ow,
                                     float* best_out) {
  std::size_t at = static_cast<std::size_t>(oh * g.stride) * g.in_w + ow * g.stride;
  float best = plane[at];
  for (int i = 0; i < g.kernel; ++i) {
    for (int j = 0; j < g.kernel; ++j) {
      const std::size_t idx =
          static_cast<std::size_t>(oh * g.stride + i) * g.in_w + ow * g.stride + j;
      if (plane[idx] > best) {
        best = plane[idx];
        at = idx;
      }
    }
  }
  *best_out = best;
  return at;
}

__global__ void pool_fwd(const float* x, float* y, PoolGeom g, std::size_t count) {
  const int oh_count = g.out_h(), ow_count = g.out_w();
  PSRT_GRID_LOOP(i, count) {
    const std::size_t p = i / (static_cast<std::size_t>(oh_count) * ow_count);
    const int rest = static_cast<int>(i % (static_cast<std::size_t>(oh_count) * ow_count));
    float best;
    window_argmax(x + p * g.in_h * g.in_w, g, rest / ow_count, rest % ow_count, &best);
    y[i] = best;
  }
}

// dx must be zero; windows may overlap, hence the atomic add.
__global__ void pool_bwd(const float* x, const float* dy, float* dx, PoolGeom g,
                         std::size_t count) {
  const int oh_count = g.out_h(), ow_count = g.out_w();
  PSRT_GRID_LOOP(i, count) {
    const std::size_t p = i / (static_cast<std::size_t>(oh_count) * ow_count);
    const int rest = static_cast<int>(i % (static_cast<std::size_t>(oh_count) * ow_count));
    const std::size_t plane = p * g.in_h * g.in_w;
    float best;
    const std::size_t at = window_argmax(x + plane, g, rest / ow_count, rest % ow_count, &best);
    atomicAdd(dx + plane + at, dy[i]);
  }
}

__global__ void dropout_apply(const float* in, float* out, std::size_t count, uint32_t threshold,
                              float scale, uint64_t step_seed) {
  PSRT_GRID_LOOP(i, count) {
    out[i] = dropout_keeps(step_seed, i, threshold) ? in[i] * scale : 0.0f;
  }
}

// One thread per sample (the class count is small): stable softmax in double, as on the CPU.
__global__ void softmax_xent_fwd(const float* z, const int32_t* labels, float* p, float* loss,
                                 int n, int k) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= n) return;
  const float* zr = z + static_cast<std::size_t>(r) * k;
  float* pr = p + static_cast<std::size_t>(r) * k;
  float zmax = zr[0];
  for (int c = 1; c < k; ++c) zmax = fmaxf(zmax, zr[c]);
  double sum = 0.0;
  for (int c = 0; c < k; ++c) sum += exp(static_cast<double>(zr[c] - zmax));
  const double log_sum = log(sum);
  for (int c = 0; c < k; ++c)
    pr[c] = static_cast<float>(exp(static_cast<double>(zr[c] - zmax) - log_sum));
  loss[r] = static_cast<float>(log_sum - static_cast<double>(zr[labels[r]] - zmax));
}

__global__ void softmax_xent_bwd(const float* p, const int32_t* labels, float* dz, int n, int k) {
  const std::size_t count = static_cast<std::size_t>(n) * k;
  const float scale = 1.0f / static_cast<float>(n);
  PSRT_GRID_LOOP(i, count) {
    const std::size_t r = i / k;
    const int c = static_cast<int>(i % k);
    dz[i] = p[i] * scale - (c == labels[r] ? scale : 0.0f);
  }
}

#undef PSRT_GRID_LOOP

}  // namespace

void relu_forward(const float* x, float* y, std::size_t count) {
  if (count == 0) return;
  relu_fwd<<<blocks_for(count), kThreads>>>(x, y, count);
  PSRT_CUDA_CHECK_LAUNCH("relu_fwd");
}

void relu_backward(const float* y, const float* dy, float* dx, std::size_t count) {
  if (count == 0) return;
  relu_bwd<<<blocks_for(count), kThreads>>>(y, dy, dx, count);
  PSRT_CUDA_CHECK_LAUNCH("relu_bwd");
}

void maxpool2d_forward(const PoolGeom& g, const float* x, float* y, int n) {
  const std::size_t count =
      static_cast<std::size_t>(n > 0 ? n : 0) * g.channels * g.out_h() * g.out_w();
  if (count == 0) return;
  pool_fwd<<<blocks_for(count), kThreads>>>(x, y, g, count);
  PSRT_CUDA_CHECK_LAUNCH("pool_fwd");
}

void maxpool2d_backward(const PoolGeom& g, const float* x, const float* /*y*/, const float* dy,
                        float* dx, int n) {
  const std::size_t planes = static_cast<std::size_t>(n > 0 ? n : 0) * g.channels;
  const std::size_t count = planes * g.out_h() * g.out_w();
  if (count == 0) return;
  PSRT_CUDA_CHECK(cudaMemset(dx, 0, planes * g.in_h * g.in_w * sizeof(float)));
  pool_bwd<<<blocks_for(count), kThreads>>>(x, dy, dx, g, count);
  PSRT_CUDA_CHECK_LAUNCH("pool_bwd");
}

void dropout_forward(const float* x, float* y, std::size_t count, float p, uint64_t step_seed) {
  if (count == 0) return;
  dropout_apply<<<blocks_for(count), kThreads>>>(x, y, count, dropout_threshold(p),
                                                 1.0f / (1.0f - p), step_seed);
  PSRT_CUDA_CHECK_LAUNCH("dropout_apply");
}

void dropout_backward(const float* dy, float* dx, std::size_t count, float p, uint64_t step_seed) {
  dropout_forward(dy, dx, count, p, step_seed);  // the same mask and scale
}

float softmax_xent_forward(const float* z, const int32_t* labels, float* p, float* sample_loss,
                           int n, int k) {
  if (n <= 0) return 0.0f;
  softmax_xent_fwd<<<blocks_for(static_cast<std::size_t>(n)), kThreads>>>(z, labels, p, sample_loss,
                                                                          n, k);
  PSRT_CUDA_CHECK_LAUNCH("softmax_xent_fwd");
  std::vector<float> losses(static_cast<std::size_t>(n));
  PSRT_CUDA_CHECK(cudaMemcpy(losses.data(), sample_loss, losses.size() * sizeof(float),
                             cudaMemcpyDeviceToHost));
  double total = 0.0;
  for (const float l : losses) total += l;
  return static_cast<float>(total / n);
}

void softmax_xent_backward(const float* p, const int32_t* labels, float* dz, int n, int k) {
  const std::size_t count = static_cast<std::size_t>(n > 0 ? n : 0) * k;
  if (count == 0) return;
  softmax_xent_bwd<<<blocks_for(count), kThreads>>>(p, labels, dz, n, k);
  PSRT_CUDA_CHECK_LAUNCH("softmax_xent_bwd");
}

}  // namespace psrt::engine::cuda
