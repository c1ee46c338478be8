// Linear and Conv2d on the GPU: cuBLAS sgemm plus im2col / col2im / bias kernels.
#include <climits>
#include <stdexcept>
#include <string>

#include "engine/cuda/gpu_kernels.h"
#include "engine/cuda/gpu_layers.h"

namespace psrt::engine::cuda {
namespace {

// y[r, c] = b[c] for rows of `width` (also NCHW planes: b per channel, `plane` elements each).
__global__ void broadcast_bias(const float* b, float* y, std::size_t count, int channels,
                               int plane) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    y[i] = b[(i / plane) % channels];
  }
}

// db[c] = sum over samples and the plane of dy[s, c, :]; one block per channel, tree reduction.
__global__ void bias_grad(const float* dy, float* db, int n, int channels, int plane) {
  __shared__ float partial[kThreads];
  const int c = blockIdx.x;
  float sum = 0.0f;
  const std::size_t per_channel = static_cast<std::size_t>(n) * plane;
  for (std::size_t j = threadIdx.x; j < per_channel; j += blockDim.x) {
    const std::size_t s = j / plane, q = j % plane;
    sum += dy[(s * channels + c) * plane + q];
  }
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) db[c] = partial[0];
}

// col[s][(c, ki, kj)][(oh, ow)] for the whole batch; one thread per column element.
__global__ void im2col_batch(const float* x, float* col, ConvGeom g, int n) {
  const int oh_count = g.out_h(), ow_count = g.out_w();
  const std::size_t hw = static_cast<std::size_t>(oh_count) * ow_count;
  const std::size_t per_sample = g.col_rows() * hw;
  const std::size_t count = per_sample * n;
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const std::size_t s = i / per_sample, rest = i % per_sample;
    const int row = static_cast<int>(rest / hw), pix = static_cast<int>(rest % hw);
    const int c = row / (g.kernel * g.kernel), kk = row % (g.kernel * g.kernel);
    const int ih = (pix / ow_count) * g.stride - g.pad + kk / g.kernel;
    const int iw = (pix % ow_count) * g.stride - g.pad + kk % g.kernel;
    const bool inside = ih >= 0 && ih < g.in_h && iw >= 0 && iw < g.in_w;
    col[i] = inside ? x[((s * g.in_c + c) * g.in_h + ih) * g.in_w + iw] : 0.0f;
  }
}

// dx[s, c, ih, iw] = sum of the column entries that im2col copied from it (a gather: no atomics).
__global__ void col2im_batch(const float* col, float* dx, ConvGeom g, int n) {
  const int oh_count = g.out_h(), ow_count = g.out_w();
  const std::size_t hw = static_cast<std::size_t>(oh_count) * ow_count;
  const std::size_t count = g.in_size() * n;
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const int iw = static_cast<int>(i % g.in_w), ih = static_cast<int>((i / g.in_w) % g.in_h);
    const std::size_t sc = i / (static_cast<std::size_t>(g.in_w) * g.in_h);
    const int c = static_cast<int>(sc % g.in_c);
    const std::size_t s = sc / g.in_c;
    const float* cs = col + s * g.col_rows() * hw;
    float sum = 0.0f;
    for (int ki = 0; ki < g.kernel; ++ki) {
      const int oy = ih + g.pad - ki;
      if (oy < 0 || oy % g.stride != 0 || oy / g.stride >= oh_count) continue;
      for (int kj = 0; kj < g.kernel; ++kj) {
        const int ox = iw + g.pad - kj;
        if (ox < 0 || ox % g.stride != 0 || ox / g.stride >= ow_count) continue;
        const int row = (c * g.kernel + ki) * g.kernel + kj;
        sum += cs[static_cast<std::size_t>(row) * hw + (oy / g.stride) * ow_count + ox / g.stride];
      }
    }
    dx[i] = sum;
  }
}

// out[i] = max(pre[i] + b[channel], 0): the layer's bias and the ReLU after it in one pass (the
// GEMM wrote pre without the bias). Rows of `width` are NCHW planes of `plane` elements per
// channel (plane 1: a linear layer's [n, out]).
__global__ void bias_relu(const float* pre, const float* b, float* out, std::size_t count,
                          int channels, int plane) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const float v = __fadd_rn(pre[i], b[(i / plane) % channels]);
    out[i] = v > 0.0f ? v : 0.0f;
  }
}

// dw[e] = sum over s of part[s][e], in sample order (deterministic, as the CPU layer accumulates).
__global__ void sum_samples(const float* part, float* dw, std::size_t size, int n) {
  for (std::size_t e = blockIdx.x * blockDim.x + threadIdx.x; e < size;
       e += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    float sum = part[e];
    for (int s = 1; s < n; ++s) sum = __fadd_rn(sum, part[static_cast<std::size_t>(s) * size + e]);
    dw[e] = sum;
  }
}

// db[c] = sum over rows of dy[n, width]; one thread per column.
__global__ void column_sums(const float* dy, float* db, int n, int width) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= width) return;
  float sum = 0.0f;
  for (int r = 0; r < n; ++r) sum += dy[static_cast<std::size_t>(r) * width + c];
  db[c] = sum;
}

// The batch's im2col columns: the first part of the conv workspace.
std::size_t col_elements(const ConvGeom& g, int n) {
  return g.col_rows() * g.col_cols() * static_cast<std::size_t>(n > 0 ? n : 0);
}

}  // namespace

void linear_forward(GpuContext& ctx, const float* x, const float* w, const float* b, float* y,
                    int n, int in, int out) {
  if (n <= 0) return;
  const std::size_t count = static_cast<std::size_t>(n) * out;
  broadcast_bias<<<blocks_for(count), kThreads>>>(b, y, count, out, 1);
  PSRT_CUDA_CHECK_LAUNCH("broadcast_bias");
  gemm_rm(ctx.cublas(), false, true, n, out, in, 1.0f, x, in, w, in, 1.0f, y, out);
}

void linear_forward_relu(GpuContext& ctx, const float* x, const float* w, const float* b,
                         float* pre, float* y, int n, int in, int out) {
  if (n <= 0) return;
  const std::size_t count = static_cast<std::size_t>(n) * out;
  gemm_rm(ctx.cublas(), false, true, n, out, in, 1.0f, x, in, w, in, 0.0f, pre, out);
  bias_relu<<<blocks_for(count), kThreads>>>(pre, b, y, count, out, 1);
  PSRT_CUDA_CHECK_LAUNCH("bias_relu");
}

void linear_backward(GpuContext& ctx, const float* x, const float* dy, const float* w, float* dx,
                     float* dw, float* db, int n, int in, int out) {
  if (n <= 0) return;
  gemm_rm(ctx.cublas(), true, false, out, in, n, 1.0f, dy, out, x, in, 0.0f, dw, in);
  column_sums<<<blocks_for(static_cast<std::size_t>(out)), kThreads>>>(dy, db, n, out);
  PSRT_CUDA_CHECK_LAUNCH("column_sums");
  if (dx != nullptr)
    gemm_rm(ctx.cublas(), false, false, n, in, out, 1.0f, dy, out, w, in, 0.0f, dx, in);
}

std::size_t conv2d_workspace(const ConvGeom& g, int n) {
  // The batch's im2col columns, then one weight gradient per sample (backward).
  return col_elements(g, n) +
         g.col_rows() * static_cast<std::size_t>(g.out_c) * static_cast<std::size_t>(n > 0 ? n : 0);
}

void conv2d_forward(GpuContext& ctx, const ConvGeom& g, const float* x, const float* w,
                    const float* b, float* y, int n, float* workspace) {
  if (n <= 0) return;
  const int m = g.out_c, k = static_cast<int>(g.col_rows()), hw = static_cast<int>(g.col_cols());
  const std::size_t out_count = g.out_size() * n;
  broadcast_bias<<<blocks_for(out_count), kThreads>>>(b, y, out_count, m, hw);
  PSRT_CUDA_CHECK_LAUNCH("broadcast_bias");
  im2col_batch<<<blocks_for(col_elements(g, n)), kThreads>>>(x, workspace, g, n);
  PSRT_CUDA_CHECK_LAUNCH("im2col_batch");
  // y_s[m, hw] = W[m, k] col_s[k, hw] + y_s, for every sample s
  gemm_rm_batched(ctx.cublas(), false, false, m, hw, k, 1.0f, w, k, 0, workspace, hw,
                  static_cast<long long>(k) * hw, 1.0f, y, hw, static_cast<long long>(m) * hw, n);
}

void conv2d_forward_relu(GpuContext& ctx, const ConvGeom& g, const float* x, const float* w,
                         const float* b, float* pre, float* y, int n, float* workspace) {
  if (n <= 0) return;
  const int m = g.out_c, k = static_cast<int>(g.col_rows()), hw = static_cast<int>(g.col_cols());
  im2col_batch<<<blocks_for(col_elements(g, n)), kThreads>>>(x, workspace, g, n);
  PSRT_CUDA_CHECK_LAUNCH("im2col_batch");
  // pre_s[m, hw] = W[m, k] col_s[k, hw], for every sample s; then the bias and the ReLU.
  gemm_rm_batched(ctx.cublas(), false, false, m, hw, k, 1.0f, w, k, 0, workspace, hw,
                  static_cast<long long>(k) * hw, 0.0f, pre, hw, static_cast<long long>(m) * hw, n);
  const std::size_t count = g.out_size() * n;
  bias_relu<<<blocks_for(count), kThreads>>>(pre, b, y, count, m, hw);
  PSRT_CUDA_CHECK_LAUNCH("bias_relu");
}

void conv2d_backward(GpuContext& ctx, const ConvGeom& g, const float* x, const float* dy,
                     const float* w, float* dx, float* dw, float* db, int n, float* workspace) {
  if (n <= 0) return;
  const int m = g.out_c, k = static_cast<int>(g.col_rows()), hw = static_cast<int>(g.col_cols());
  bias_grad<<<static_cast<unsigned>(m), kThreads>>>(dy, db, n, m, hw);
  PSRT_CUDA_CHECK_LAUNCH("bias_grad");
  im2col_batch<<<blocks_for(col_elements(g, n)), kThreads>>>(x, workspace, g, n);
  PSRT_CUDA_CHECK_LAUNCH("im2col_batch");
  const std::size_t col_size = static_cast<std::size_t>(k) * hw;
  const std::size_t out_size = static_cast<std::size_t>(m) * hw;
  const std::size_t w_size = static_cast<std::size_t>(m) * k;
  // dW_s[m, k] = dy_s[m, hw] col_s^T[hw, k] for every sample in one batched GEMM (behind the
  // columns in the workspace), then dW = their sum in sample order (deterministic): two launches
  // where a GEMM per sample took n.
  float* parts = workspace + col_size * n;
  gemm_rm_batched(ctx.cublas(), false, true, m, k, hw, 1.0f, dy, hw,
                  static_cast<long long>(out_size), workspace, hw,
                  static_cast<long long>(col_size), 0.0f, parts, k,
                  static_cast<long long>(w_size), n);
  sum_samples<<<blocks_for(w_size), kThreads>>>(parts, dw, w_size, n);
  PSRT_CUDA_CHECK_LAUNCH("sum_samples");
  if (dx == nullptr) return;
  // dcol_s[k, hw] = W^T[k, m] dy_s[m, hw], into the workspace (the columns are no longer needed).
  gemm_rm_batched(ctx.cublas(), true, false, k, hw, m, 1.0f, w, k, 0, dy, hw,
                  static_cast<long long>(out_size), 0.0f, workspace, hw,
                  static_cast<long long>(col_size), n);
  col2im_batch<<<blocks_for(g.in_size() * n), kThreads>>>(workspace, dx, g, n);
  PSRT_CUDA_CHECK_LAUNCH("col2im_batch");
}

namespace {

int blas_count(const char* what, std::size_t count) {
  if (count > static_cast<std::size_t>(INT_MAX)) {
    throw std::invalid_argument(std::string(what) + ": " + std::to_string(count) +
                                " floats exceed cuBLAS's int count");
  }
  return static_cast<int>(count);
}

}  // namespace

void scale_on_device(GpuContext& ctx, float* x, std::size_t count, float alpha) {
  if (count == 0) return;
  const int c = blas_count("scale_on_device", count);
  PSRT_CUBLAS_CHECK(cublasSscal(ctx.cublas(), c, &alpha, x, 1));
}

void add_on_device(GpuContext& ctx, const float* x, float* y, std::size_t count) {
  if (count == 0) return;
  const int c = blas_count("add_on_device", count);
  const float one = 1.0f;
  PSRT_CUBLAS_CHECK(cublasSaxpy(ctx.cublas(), c, &one, x, 1, y, 1));
}

}  // namespace psrt::engine::cuda
