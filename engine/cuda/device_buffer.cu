#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "engine/cuda/cuda_check.h"
#include "engine/cuda/device_buffer.h"

namespace psrt::engine::cuda {

int device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky-free error so later calls start clean
    return 0;
  }
  return count;
}

void select_device(int index) {
  PSRT_CUDA_CHECK(cudaSetDevice(index));
}

void copy_to_device(float* device_dst, const float* host_src, std::size_t count) {
  if (count == 0) return;
  PSRT_CUDA_CHECK(cudaMemcpy(device_dst, host_src, count * sizeof(float), cudaMemcpyHostToDevice));
}

void copy_to_host(float* host_dst, const float* device_src, std::size_t count) {
  if (count == 0) return;
  PSRT_CUDA_CHECK(cudaMemcpy(host_dst, device_src, count * sizeof(float), cudaMemcpyDeviceToHost));
}

void copy_on_device(float* device_dst, const float* device_src, std::size_t count) {
  if (count == 0) return;
  PSRT_CUDA_CHECK(
      cudaMemcpy(device_dst, device_src, count * sizeof(float), cudaMemcpyDeviceToDevice));
}

DeviceBuffer::DeviceBuffer(std::size_t count) {
  reserve(count);
}

DeviceBuffer::~DeviceBuffer() {
  if (data_ != nullptr) cudaFree(data_);  // no throw from a destructor
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept : data_(other.data_), size_(other.size_) {
  other.data_ = nullptr;
  other.size_ = 0;
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) cudaFree(data_);
    data_ = other.data_;
    size_ = other.size_;
    other.data_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

void DeviceBuffer::reserve(std::size_t count) {
  if (count <= size_) return;
  if (data_ != nullptr) PSRT_CUDA_CHECK(cudaFree(data_));
  data_ = nullptr;
  size_ = 0;
  PSRT_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&data_), count * sizeof(float)));
  size_ = count;
}

void DeviceBuffer::upload(std::span<const float> host) {
  if (host.size() != size_) {
    throw std::invalid_argument("DeviceBuffer::upload: " + std::to_string(host.size()) +
                                " floats into a buffer of " + std::to_string(size_));
  }
  PSRT_CUDA_CHECK(cudaMemcpy(data_, host.data(), host.size_bytes(), cudaMemcpyHostToDevice));
}

void DeviceBuffer::upload_async(std::span<const float> host) {
  if (host.size() != size_) {
    throw std::invalid_argument("DeviceBuffer::upload_async: " + std::to_string(host.size()) +
                                " floats into a buffer of " + std::to_string(size_));
  }
  PSRT_CUDA_CHECK(cudaMemcpyAsync(data_, host.data(), host.size_bytes(), cudaMemcpyHostToDevice,
                                  cudaStreamLegacy));
}

PinnedBuffer::PinnedBuffer(std::size_t count) : size_(count) {
  void* p = nullptr;
  PSRT_CUDA_CHECK(cudaHostAlloc(&p, std::max<std::size_t>(count, 1) * sizeof(float),
                                cudaHostAllocDefault));
  data_ = static_cast<float*>(p);
  std::fill(data_, data_ + size_, 0.0f);
}

PinnedBuffer::~PinnedBuffer() {
  if (data_ != nullptr) cudaFreeHost(data_);
}

PinnedBuffer::PinnedBuffer(PinnedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) cudaFreeHost(data_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void DeviceBuffer::download(std::span<float> host) const {
  if (host.size() > size_) {
    throw std::invalid_argument("DeviceBuffer::download: " + std::to_string(host.size()) +
                                " floats from a buffer of " + std::to_string(size_));
  }
  PSRT_CUDA_CHECK(cudaMemcpy(host.data(), data_, host.size_bytes(), cudaMemcpyDeviceToHost));
}

void DeviceBuffer::zero() {
  if (size_ > 0) PSRT_CUDA_CHECK(cudaMemset(data_, 0, size_ * sizeof(float)));
}

DeviceLabels::~DeviceLabels() {
  if (data_ != nullptr) cudaFree(data_);
}

void DeviceLabels::upload(std::span<const int32_t> host) {
  if (host.size() > size_) {
    if (data_ != nullptr) PSRT_CUDA_CHECK(cudaFree(data_));
    data_ = nullptr;
    size_ = 0;
    PSRT_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&data_), host.size_bytes()));
    size_ = host.size();
  }
  PSRT_CUDA_CHECK(cudaMemcpy(data_, host.data(), host.size_bytes(), cudaMemcpyHostToDevice));
}

GpuContext::GpuContext() {
  if (device_count() == 0) throw std::runtime_error("GpuContext: no CUDA device");
  cublasHandle_t h = nullptr;
  PSRT_CUBLAS_CHECK(cublasCreate(&h));
  handle_ = h;
  // Reproducible sums: no atomics inside cuBLAS.
  PSRT_CUBLAS_CHECK(cublasSetAtomicsMode(handle_, CUBLAS_ATOMICS_NOT_ALLOWED));
}

GpuContext::~GpuContext() {
  if (handle_ != nullptr) cublasDestroy(handle_);
}

void GpuContext::synchronize() const {
  // The network's one stream only: other streams (the LACO encoder's) go on.
  PSRT_CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
}

}  // namespace psrt::engine::cuda
