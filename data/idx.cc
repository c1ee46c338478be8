#include "data/idx.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <memory>
#include <utility>

#include "core/status.h"

namespace psrt::data {
namespace {

constexpr uint32_t kImagesMagic = 2051;       // n, rows, cols
constexpr uint32_t kColourImagesMagic = 2052;  // n, rows, cols, channels
constexpr uint32_t kLabelsMagic = 2049;
constexpr uint64_t kMaxElements = uint64_t{1} << 32;  // 4 Gi pixels: refuse absurd headers

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};

// A gzip-or-plain file, read with zlib; every error is a ConfigError naming the file.
class IdxReader {
 public:
  explicit IdxReader(std::string path) : path_(std::move(path)) {
    // A FIFO blocked the open for ever (the worker never registered and the job gave up on it
    // later, naming nothing); a device or a folder is no data file either.
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::file_status st = fs::status(path_, ec);
    if (!fs::exists(st)) {
      if (ec.value() == ELOOP) fail("a loop of symbolic links");  // was "a link to nothing"
      fail(fs::is_symlink(fs::symlink_status(path_, ec)) ? "a symbolic link to nothing"
                                                          : "no such file");
    }
    if (!fs::is_regular_file(st)) fail("not a regular file (a FIFO, a device or a folder?)");
    file_.reset(gzopen(path_.c_str(), "rb"));
    if (!file_) fail(std::string("cannot open file: ") + std::strerror(errno));
    gzbuffer(file_.get(), 1 << 17);
  }

  [[noreturn]] void fail(const std::string& problem) const {
    throw ConfigError("IDX file " + path_ + ": " + problem);
  }

  // Reads up to `size` bytes; returns how many were read (less at end of file).
  std::size_t read_some(void* dst, std::size_t size) {
    auto* out = static_cast<unsigned char*>(dst);
    std::size_t done = 0;
    while (done < size) {
      const auto want = static_cast<unsigned>(std::min<std::size_t>(size - done, 1u << 30));
      const int got = gzread(file_.get(), out + done, want);
      if (got < 0) {
        int code = 0;
        const char* msg = gzerror(file_.get(), &code);
        fail(std::string("read error: ") + (msg != nullptr ? msg : "unknown"));
      }
      if (got == 0) {
        // A gzip stream cut short (its trailer, which holds the check, gone) reads as an end of
        // file with zlib's "unexpected end of file" set: the data read was taken unchecked.
        int code = Z_OK;
        const char* msg = gzerror(file_.get(), &code);
        if (code != Z_OK && code != Z_STREAM_END) {
          fail(std::string("read error: ") + (msg != nullptr ? msg : "unknown") +
               " (a gzip file cut short?)");
        }
        break;
      }
      done += static_cast<std::size_t>(got);
    }
    return done;
  }

  // Reads exactly `size` bytes into a vector grown as they arrive, so that a header claiming more
  // than the file holds costs what the file holds (found by fuzz_idx: a 30-byte file asked for
  // 3.4 GB up front).
  std::vector<unsigned char> read_vector(uint64_t size, const char* what) {
    constexpr std::size_t kStep = std::size_t{16} << 20;
    std::vector<unsigned char> out;
    while (out.size() < size) {
      const std::size_t have = out.size();
      const auto want = static_cast<std::size_t>(std::min<uint64_t>(kStep, size - have));
      // Doubling, but never past the claimed size: a true claim ends with no spare capacity.
      if (have + want > out.capacity()) {
        out.reserve(std::size_t(std::min<uint64_t>(size, std::max(2 * out.capacity(),
                                                                   have + want))));
      }
      out.resize(have + want);
      const std::size_t got = read_some(out.data() + have, want);
      if (got != want) {
        fail("truncated: expected " + std::to_string(size) + " bytes of " + what + ", got " +
             std::to_string(have + got));
      }
    }
    return out;
  }

  void read_exact(void* dst, std::size_t size, const char* what) {
    const std::size_t got = read_some(dst, size);
    if (got != size) {
      fail("truncated: expected " + std::to_string(size) + " bytes of " + what + ", got " +
           std::to_string(got));
    }
  }

  uint32_t read_u32(const char* what) {
    std::array<unsigned char, 4> b{};
    read_exact(b.data(), b.size(), what);
    return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3];
  }

  void expect_end() {
    unsigned char extra = 0;
    if (read_some(&extra, 1) != 0) fail("unexpected trailing bytes after the data");
  }

 private:
  std::string path_;
  std::unique_ptr<gzFile_s, GzCloser> file_;
};

void check_magic(IdxReader& r, uint32_t expected) {
  const uint32_t magic = r.read_u32("header (magic number)");
  if (magic != expected) {
    r.fail("bad magic number " + std::to_string(magic) + " (expected " + std::to_string(expected) +
           ")");
  }
}

int check_dim(IdxReader& r, uint32_t value, const char* what, bool allow_zero) {
  if ((value == 0 && !allow_zero) || value > static_cast<uint32_t>(INT_MAX)) {
    r.fail(std::string("bad ") + what + " " + std::to_string(value));
  }
  return static_cast<int>(value);
}

// (H, W, C) per image, as an idx4 file holds it, to (C, H, W). Grey images are passed through.
std::vector<unsigned char> channel_major(std::vector<unsigned char> hwc, const Dataset& ds) {
  if (ds.channels == 1) return hwc;
  std::vector<unsigned char> chw(hwc.size());
  const std::size_t plane = std::size_t(ds.rows) * std::size_t(ds.cols), image = ds.image_size();
  for (std::size_t at = 0; at < hwc.size(); at += image) {
    for (std::size_t p = 0; p < plane; ++p) {
      for (std::size_t c = 0; c < std::size_t(ds.channels); ++c) {
        chw[at + c * plane + p] = hwc[at + p * std::size_t(ds.channels) + c];
      }
    }
  }
  return chw;
}

}  // namespace

namespace {
float pixel_value(unsigned char p) { return static_cast<float>(p) / 255.0f; }
}  // namespace

void Dataset::copy_image(std::size_t i, float* out) const {
  const std::size_t size = image_size(), at = i * size;
  if (!pixels.empty()) {
    for (std::size_t k = 0; k < size; ++k) out[k] = pixel_value(pixels[at + k]);
  } else {
    std::copy_n(images.begin() + std::ptrdiff_t(at), size, out);
  }
}

void Dataset::to_floats() {
  if (pixels.empty()) return;
  images.resize(pixels.size());
  std::transform(pixels.begin(), pixels.end(), images.begin(), pixel_value);
  pixels.clear();
  pixels.shrink_to_fit();
}

void Dataset::truncate(int count) {
  if (count <= 0 || count >= n) return;
  n = count;
  if (!images.empty()) images.resize(std::size_t(n) * image_size());
  if (!pixels.empty()) pixels.resize(std::size_t(n) * image_size());
  labels.resize(std::size_t(n));
  // The rest is given back (a train_limit of 2,000 keeps 1.6 MB of Fashion-MNIST's 47 MB).
  images.shrink_to_fit();
  pixels.shrink_to_fit();
  labels.shrink_to_fit();
}

Dataset load_idx(const std::string& images_path, const std::string& labels_path,
                 PixelForm form) {
  Dataset ds;
  IdxReader images(images_path);
  const uint32_t magic = images.read_u32("header (magic number)");
  if (magic != kImagesMagic && magic != kColourImagesMagic) {
    images.fail("bad magic number " + std::to_string(magic) + " (expected " +
                std::to_string(kImagesMagic) + ", or " + std::to_string(kColourImagesMagic) +
                " for colour images)");
  }
  ds.n = check_dim(images, images.read_u32("header (image count)"), "image count", true);
  ds.rows = check_dim(images, images.read_u32("header (rows)"), "row count", false);
  ds.cols = check_dim(images, images.read_u32("header (columns)"), "column count", false);
  if (magic == kColourImagesMagic) {
    ds.channels = check_dim(images, images.read_u32("header (channels)"), "channel count", false);
  }
  const uint64_t pixels = uint64_t(ds.n) * uint64_t(ds.rows) * uint64_t(ds.cols) *
                          uint64_t(ds.channels);
  if (pixels > kMaxElements) {
    images.fail("header says " + std::to_string(pixels) + " pixels, more than this loader takes");
  }

  IdxReader labels(labels_path);
  check_magic(labels, kLabelsMagic);
  const int label_count =
      check_dim(labels, labels.read_u32("header (label count)"), "label count", true);
  if (label_count != ds.n) {
    throw ConfigError("IDX files " + images_path + " and " + labels_path + ": " +
                      std::to_string(ds.n) + " images but " + std::to_string(label_count) +
                      " labels");
  }

  std::vector<unsigned char> raw = images.read_vector(pixels, "pixel data");
  images.expect_end();
  ds.pixels = channel_major(std::move(raw), ds);  // raw is read anew for the labels below
  if (form == PixelForm::kFloats) ds.to_floats();

  raw = labels.read_vector(uint64_t(ds.n), "label data");
  labels.expect_end();
  ds.labels.assign(raw.begin(), raw.end());
  return ds;
}

Dataset load_split(const std::string& dir, bool train, int classes, PixelForm form) {
  if (std::error_code ec; !std::filesystem::is_directory(dir, ec)) {
    throw ConfigError("data.path: '" + dir + "' is not a folder (the folder of the IDX files)");
  }
  const std::string prefix = dir + "/" + (train ? "train" : "t10k");
  // A link counts as there even where its target is not (IdxReader names it).
  const auto there = [](const std::string& path) {
    std::error_code ec;
    return std::filesystem::exists(std::filesystem::symlink_status(path, ec));
  };
  const auto named = [&](const std::string& base) {  // the plain name only where it alone exists
    return !there(base + ".gz") && there(base) ? base : base + ".gz";
  };
  const std::string labels_path = named(prefix + "-labels-idx1-ubyte");
  std::string images_path = named(prefix + "-images-idx3-ubyte");
  if (!there(images_path)) {
    const std::string colour = named(prefix + "-images-idx4-ubyte");
    if (there(colour)) images_path = colour;
  }
  Dataset ds = load_idx(images_path, labels_path, form);
  for (const int32_t label : ds.labels) {
    if (label < 0 || label >= classes) {
      throw ConfigError("IDX file " + labels_path + ": label " + std::to_string(label) +
                        " is not in [0, " + std::to_string(classes) + ") (data.classes)");
    }
  }
  return ds;
}

}  // namespace psrt::data
