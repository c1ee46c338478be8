// A checkpoint as the version-1 format wrote it (no optimizer name), made from a current one:
// the files of an earlier psrt build, for the tests of reading them.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "core/durable_file.h"

namespace psrt::test {

inline std::vector<uint8_t> as_version_1(std::vector<uint8_t> bytes) {
  const auto u32_at = [&](std::size_t at) {
    uint32_t v = 0;
    std::memcpy(&v, bytes.data() + at, 4);
    return v;
  };
  const uint32_t one = 1;
  std::memcpy(bytes.data() + 8, &one, 4);  // the version follows the 8-byte magic
  const std::size_t name_at = 8 + 4 + 4 + u32_at(12) + 3 * 4;  // after job id, rank, counts
  const auto name_end = std::ptrdiff_t(name_at + 4 + u32_at(name_at));
  bytes.erase(bytes.begin() + std::ptrdiff_t(name_at), bytes.begin() + name_end);
  bytes.resize(bytes.size() - 4);
  const uint32_t crc = crc32_of(bytes);
  bytes.resize(bytes.size() + 4);
  std::memcpy(bytes.data() + bytes.size() - 4, &crc, 4);
  return bytes;
}

}  // namespace psrt::test
