// For tests that write MNIST-style IDX files: a file's bytes (big-endian header, then the data)
// and a plain write of them; a small learnable split of such files.
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace psrt::test {

inline std::vector<unsigned char> idx_bytes(uint32_t magic, const std::vector<uint32_t>& dims,
                                            const std::vector<unsigned char>& payload) {
  std::vector<unsigned char> out;
  auto put = [&](uint32_t v) {
    for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<unsigned char>(v >> s));
  };
  put(magic);
  for (uint32_t d : dims) put(d);
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

inline void write_plain(const std::string& path, const std::vector<unsigned char>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

// `n` images of 12x12 in 4 classes, dir/prefix-images-idx3-ubyte and dir/prefix-labels-idx1-ubyte:
// class k lights quadrant k of the image over noise. With `channels` > 1 the images are colour,
// dir/prefix-images-idx4-ubyte in (H, W, C) order, and class k lights its quadrant in channel
// k % channels only.
inline void write_quadrant_split(const std::string& dir, const std::string& prefix, uint32_t n,
                                 uint64_t seed, uint32_t channels = 1) {
  std::mt19937_64 gen(seed);
  std::uniform_int_distribution<int> noise(0, 120), label(0, 3);
  std::vector<unsigned char> pixels, labels;
  for (uint32_t i = 0; i < n; ++i) {
    const int k = label(gen);
    labels.push_back(static_cast<unsigned char>(k));
    for (int r = 0; r < 12; ++r) {
      for (int c = 0; c < 12; ++c) {
        for (uint32_t ch = 0; ch < channels; ++ch) {
          const bool lit = (r / 6) * 2 + (c / 6) == k && ch == uint32_t(k) % channels;
          pixels.push_back(static_cast<unsigned char>(noise(gen) + (lit ? 130 : 0)));
        }
      }
    }
  }
  const std::string images = dir + "/" + prefix + "-images-idx";
  if (channels == 1) {
    write_plain(images + "3-ubyte", idx_bytes(2051, {n, 12, 12}, pixels));
  } else {
    write_plain(images + "4-ubyte", idx_bytes(2052, {n, 12, 12, channels}, pixels));
  }
  write_plain(dir + "/" + prefix + "-labels-idx1-ubyte", idx_bytes(2049, {n}, labels));
}

}  // namespace psrt::test
