// IDX file loading (the MNIST / Fashion-MNIST format), gzip-compressed or plain.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace psrt::data {

// How the pixels are kept: as floats (pixel / 255), or as the file's bytes (a quarter of the
// memory; copy_image gives the same floats).
enum class PixelForm { kFloats, kBytes };

struct Dataset {
  int n = 0, rows = 0, cols = 0;
  int channels = 1;             // 1: grey (an idx3 file); more: colour (idx4)
  std::vector<float> images;    // kFloats: n images of channels x rows x cols, pixel / 255
  std::vector<uint8_t> pixels;  // kBytes: the same images as the file's bytes, in that order
  std::vector<int32_t> labels;  // n

  std::size_t image_size() const {
    return std::size_t(channels) * std::size_t(rows) * std::size_t(cols);
  }
  // Image i as floats (pixel / 255) into out[0, image_size()), whichever form is kept.
  void copy_image(std::size_t i, float* out) const;
  // Keeps only the first `count` images (and labels), when there are more.
  void truncate(int count);
  // Kept as bytes: converted to floats (pixel / 255, as copy_image gives them), bytes freed.
  void to_floats();
};

// Reads an image file and an idx1-ubyte label file (magic 2049), each either gzip-compressed or
// plain (zlib reads both). The image file is idx3-ubyte (magic 2051: count, rows, columns; grey)
// or idx4-ubyte (magic 2052: count, rows, columns, channels; colour, the layout numpy's
// (N, H, W, C) arrays are written in). Each image is kept channel by channel (C, H, W: the layout
// the networks take), so a colour file's pixels are reordered as they are read. Throws
// psrt::ConfigError naming the file and the problem: missing file, bad magic, zero or oversized
// dimensions, truncated data, trailing bytes, or image and label counts that differ.
Dataset load_idx(const std::string& images_path, const std::string& labels_path,
                 PixelForm form = PixelForm::kFloats);

// The training (train-*) or test (t10k-*) pair of an MNIST-style folder:
// dir/train-images-idx3-ubyte and dir/train-labels-idx1-ubyte, each named with .gz or without (the
// .gz name is tried first; either name may hold either content). Colour images may be named
// -images-idx4-ubyte instead (read where no idx3 name exists); the name does not decide the format,
// the file's magic number does. Also checks that the labels lie in [0, classes).
Dataset load_split(const std::string& dir, bool train, int classes,
                   PixelForm form = PixelForm::kFloats);

}  // namespace psrt::data
