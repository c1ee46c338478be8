// libFuzzer: an MNIST-style pair of IDX files (what a job's data.path holds) through load_idx,
// in both pixel forms. It must reject (with a reason) or return a dataset whose sizes agree with
// its header, and the two forms must give the same floats.
//
// Input: 2 little-endian bytes = the image file's length k, then the image file (k bytes), then
// the label file (the rest). Written to two files per run (load_idx reads files, gzip or plain).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "core/status.h"
#include "data/idx.h"

namespace {

std::string path_of(const char* what) {
  return "/tmp/psrt-fuzz-idx-" + std::to_string(::getpid()) + "-" + what;
}

void write(const std::string& path, const uint8_t* data, std::size_t size) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) __builtin_trap();
  if (size > 0 && std::fwrite(data, 1, size, f) != size) __builtin_trap();
  std::fclose(f);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const std::size_t k = std::min<std::size_t>(size - 2, data[0] | (data[1] << 8));
  static const std::string images = path_of("images"), labels = path_of("labels");
  write(images, data + 2, k);
  write(labels, data + 2 + k, size - 2 - k);
  using psrt::data::PixelForm;
  try {
    const auto floats = psrt::data::load_idx(images, labels, PixelForm::kFloats);
    const auto bytes = psrt::data::load_idx(images, labels, PixelForm::kBytes);
    const std::size_t n = std::size_t(floats.n);
    if (floats.labels.size() != n || floats.images.size() != n * floats.image_size() ||
        bytes.pixels.size() != floats.images.size() || !bytes.images.empty()) {
      __builtin_trap();
    }
    std::vector<float> a(floats.image_size()), b(floats.image_size());
    for (std::size_t i = 0; i < n; ++i) {
      floats.copy_image(i, a.data());
      bytes.copy_image(i, b.data());
      if (a != b) __builtin_trap();
    }
  } catch (const psrt::ConfigError& e) {
    if (std::string(e.what()).empty()) __builtin_trap();  // a rejection must say why
  }
  return 0;
}
