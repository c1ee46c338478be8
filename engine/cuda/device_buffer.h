// RAII float buffer in device memory, and the GPU context (device check, cuBLAS handle). Plain C++:
// no CUDA headers, so host code (the worker, the [gpu] tests) may include it.
// Every CUDA/cuBLAS failure throws std::runtime_error naming the call and its site.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

struct cublasContext;  // cuBLAS's handle type is `cublasContext*`

namespace psrt::engine::cuda {

// Number of CUDA devices; 0 when the driver or runtime reports an error (no GPU, no driver).
// Call this before anything else CUDA on a machine that may have no GPU.
int device_count();

// Makes device `index` (0 <= index < device_count()) the calling thread's current device: every
// CUDA allocation, stream and handle made afterwards on this thread lives there.
void select_device(int index);

// Copies of `count` floats between raw pointers, in order with the work on the default stream
// (cudaMemcpy): copy_to_host returns with the values, copy_to_device once the host buffer may be
// reused. For buffers sized for the largest batch that hold a smaller one, where
// DeviceBuffer::upload's exact size does not fit.
void copy_to_device(float* device_dst, const float* host_src, std::size_t count);
void copy_to_host(float* host_dst, const float* device_src, std::size_t count);
void copy_on_device(float* device_dst, const float* device_src, std::size_t count);

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t count);  // uninitialised
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  float* data() { return data_; }
  const float* data() const { return data_; }
  std::size_t size() const { return size_; }
  // Grows (never shrinks) to at least `count` floats; contents are lost when it grows.
  void reserve(std::size_t count);

  void upload(std::span<const float> host);  // size() must equal host.size()
  // The same, queued on the default stream without waiting: `host` must stay as it is until the
  // stream has run the copy (from pinned memory the call returns at once; from pageable memory
  // CUDA stages it first).
  void upload_async(std::span<const float> host);
  void download(std::span<float> host) const;
  void zero();

 private:
  float* data_ = nullptr;
  std::size_t size_ = 0;
};

// RAII page-locked host memory of `count` floats (cudaHostAlloc), zeroed: what upload_async copies
// from without a wait.
class PinnedBuffer {
 public:
  explicit PinnedBuffer(std::size_t count);
  ~PinnedBuffer();
  PinnedBuffer(PinnedBuffer&& other) noexcept;
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  std::span<float> span() { return {data_, size_}; }
  std::span<const float> span() const { return {data_, size_}; }

 private:
  float* data_ = nullptr;
  std::size_t size_ = 0;
};

// Device labels (int32) for the softmax cross-entropy kernels.
class DeviceLabels {
 public:
  DeviceLabels() = default;
  ~DeviceLabels();
  DeviceLabels(const DeviceLabels&) = delete;
  DeviceLabels& operator=(const DeviceLabels&) = delete;
  void upload(std::span<const int32_t> host);
  const int32_t* data() const { return data_; }

 private:
  int32_t* data_ = nullptr;
  std::size_t size_ = 0;
};

// Owns a cuBLAS handle on the current device. All work goes to the default stream.
class GpuContext {
 public:
  GpuContext();
  ~GpuContext();
  GpuContext(const GpuContext&) = delete;
  GpuContext& operator=(const GpuContext&) = delete;
  cublasContext* cublas() const { return handle_; }
  void synchronize() const;

 private:
  cublasContext* handle_ = nullptr;
};

}  // namespace psrt::engine::cuda
