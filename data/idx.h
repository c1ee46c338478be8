// IDX file loading (the MNIST / Fashion-MNIST format), gzip-compressed or plain.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace psrt::data {

struct Dataset {
  int n = 0, rows = 0, cols = 0;
  std::vector<float> images;    // n * rows * cols, row-major per image, pixel / 255
  std::vector<int32_t> labels;  // n
};

// Reads an idx3-ubyte image file (magic 2051) and an idx1-ubyte label file (magic 2049), each
// either gzip-compressed or plain (zlib reads both). Throws psrt::ConfigError naming the file and
// the problem: missing file, bad magic, zero or oversized dimensions, truncated data, trailing
// bytes, or image and label counts that differ.
Dataset load_idx(const std::string& images_path, const std::string& labels_path);

// The training (train-*) or test (t10k-*) pair of an MNIST-style folder:
// dir/train-images-idx3-ubyte and dir/train-labels-idx1-ubyte, each named with .gz or without (the
// .gz name is tried first; either name may hold either content). Also checks that the labels lie in
// [0, classes).
Dataset load_split(const std::string& dir, bool train, int classes);

}  // namespace psrt::data
