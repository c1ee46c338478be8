// Little-endian byte strings for files psrt writes and reads back (checkpoints): a Writer that
// appends fixed-size values and float arrays, and a Reader that never reads past its bytes (a
// short read sets failed() and yields zeros) and checks an array's count against the bytes left
// before it allocates.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>
#include <vector>

namespace psrt {

class ByteWriter {
 public:
  template <typename T>
  void put(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    out_.insert(out_.end(), p, p + sizeof v);
  }
  void bytes(const void* p, std::size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    out_.insert(out_.end(), b, b + n);
  }
  void floats(std::span<const float> v) {
    put<uint64_t>(v.size());
    bytes(v.data(), v.size() * sizeof(float));
  }
  std::vector<uint8_t>& out() { return out_; }
  std::vector<uint8_t> take() { return std::move(out_); }

 private:
  std::vector<uint8_t> out_;
};

class ByteReader {
 public:
  explicit ByteReader(std::span<const uint8_t> bytes) : p_(bytes.data()), left_(bytes.size()) {}
  template <typename T>
  T get() {
    static_assert(std::is_trivially_copyable_v<T>);
    T v{};
    take(&v, sizeof v);
    return v;
  }
  bool take(void* dst, std::size_t n) {
    if (n == 0) return !failed_;  // dst may be an empty vector's null data()
    if (n > left_) {
      failed_ = true;
      left_ = 0;
      return false;
    }
    std::memcpy(dst, p_, n);
    p_ += n;
    left_ -= n;
    return true;
  }
  // A float array of at most `max` elements.
  bool floats(std::vector<float>& v, uint64_t max) {
    const auto n = get<uint64_t>();
    if (failed_ || n > max || n > left_ / sizeof(float)) {
      failed_ = true;
      return false;
    }
    v.resize(n);
    return take(v.data(), n * sizeof(float));
  }
  bool failed() const { return failed_; }
  std::size_t left() const { return left_; }

 private:
  const uint8_t* p_;
  std::size_t left_;
  bool failed_ = false;
};

}  // namespace psrt
