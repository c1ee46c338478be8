// For tests that write MNIST-style IDX files: a file's bytes (big-endian header, then the data)
// and a plain write of them.
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <fstream>
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

}  // namespace psrt::test
