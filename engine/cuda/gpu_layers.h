// The engine's layers on the GPU, as functions over device pointers (n samples, row-major /
// NCHW, the same layouts and semantics as the CPU layers in engine/). They run on the
// default stream and return without synchronising, except softmax_xent_forward (it returns the
// loss). Gradients are written (never accumulated) and stay on the device, where the compressor
// can take them. Plain C++: no CUDA headers.
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/conv_geom.h"
#include "engine/cuda/device_buffer.h"
#include "engine/pool_geom.h"

namespace psrt::engine::cuda {

// y[n, out] = x[n, in] W^T + b, W [out, in].
void linear_forward(GpuContext& ctx, const float* x, const float* w, const float* b, float* y,
                    int n, int in, int out);
// linear_forward and the ReLU after it, fused: pre = x W^T (no bias; scratch of n * out floats),
// y = max(pre + b, 0). Two launches where the separate layers take three.
void linear_forward_relu(GpuContext& ctx, const float* x, const float* w, const float* b,
                         float* pre, float* y, int n, int in, int out);
// dw = dy^T x, db = column sums of dy, dx = dy W (skipped when dx == nullptr).
void linear_backward(GpuContext& ctx, const float* x, const float* dy, const float* w, float* dx,
                     float* dw, float* db, int n, int in, int out);

// Floats of workspace the conv functions need for n samples (the batch's im2col columns and the
// per-sample weight gradients).
std::size_t conv2d_workspace(const ConvGeom& g, int n);
// im2col of the whole batch, then one strided-batched cuBLAS sgemm.
void conv2d_forward(GpuContext& ctx, const ConvGeom& g, const float* x, const float* w,
                    const float* b, float* y, int n, float* workspace);
// conv2d_forward and the ReLU after it, fused as linear_forward_relu does (pre: n * out_size()).
void conv2d_forward_relu(GpuContext& ctx, const ConvGeom& g, const float* x, const float* w,
                         const float* b, float* pre, float* y, int n, float* workspace);
// dW in one batched GEMM (per-sample products in the workspace) and an ordered sum over samples.
void conv2d_backward(GpuContext& ctx, const ConvGeom& g, const float* x, const float* dy,
                     const float* w, float* dx, float* dw, float* db, int n, float* workspace);

void relu_forward(const float* x, float* y, std::size_t count);
void relu_backward(const float* y, const float* dy, float* dx, std::size_t count);

void maxpool2d_forward(const PoolGeom& g, const float* x, float* y, int n);
// Routes each output gradient to the first maximum of its window, as the CPU layer does.
void maxpool2d_backward(const PoolGeom& g, const float* x, const float* y, const float* dy,
                        float* dx, int n);

// The CPU Dropout's mask for step seed `step_seed` (dropout_mask.h); `count` = n * size.
void dropout_forward(const float* x, float* y, std::size_t count, float p, uint64_t step_seed);
void dropout_backward(const float* dy, float* dx, std::size_t count, float p, uint64_t step_seed);

// Probabilities p[n, k] of logits z and the mean cross-entropy against device labels;
// sample_loss is a workspace of n floats. Synchronises (it returns the loss).
float softmax_xent_forward(const float* z, const int32_t* labels, float* p, float* sample_loss,
                           int n, int k);
// dz = (p - onehot(label)) / n.
void softmax_xent_backward(const float* p, const int32_t* labels, float* dz, int n, int k);

// Element-wise over device floats with cuBLAS (sscal, saxpy), on the default stream, each result
// rounded once as the CPU's loops are: x *= alpha; y += x.
void scale_on_device(GpuContext& ctx, float* x, std::size_t count, float alpha);
void add_on_device(GpuContext& ctx, const float* x, float* y, std::size_t count);

}  // namespace psrt::engine::cuda
