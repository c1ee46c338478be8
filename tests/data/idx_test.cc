// IDX loading: round trips through gzip and plain files written here, and every error names the
// file.
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/status.h"
#include "data/idx.h"
#include "tests/common/idx_files.h"
#include "tests/common/peak_memory.h"

namespace fs = std::filesystem;
using psrt::data::load_idx;
using psrt::test::idx_bytes;
using psrt::test::write_plain;

namespace {

// A fresh directory under the system temp dir, removed with everything in it at the end.
class TempDir {
 public:
  TempDir() {
    static int counter = 0;
    path_ = fs::temp_directory_path() /
            ("psrt_idx_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

void write_gz(const std::string& path, const std::vector<unsigned char>& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) ==
          static_cast<int>(bytes.size()));
  REQUIRE(gzclose(f) == Z_OK);
}

// The message of the ConfigError that f throws ("" if it throws none).
template <typename F>
std::string config_error(F&& f) {
  try {
    f();
  } catch (const psrt::ConfigError& e) {
    return e.what();
  }
  return "";
}

// 3 images of 2 x 3 pixels, pixel = 10 * image + position.
std::vector<unsigned char> pixels() {
  std::vector<unsigned char> p;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 6; ++j) p.push_back(static_cast<unsigned char>(10 * i + j));
  return p;
}

const std::vector<unsigned char> kLabels = {7, 0, 9};

}  // namespace

TEST_CASE("load_idx reads gzip-compressed IDX files", "[data][idx]") {
  TempDir dir;
  const auto img = dir.file("img.gz"), lab = dir.file("lab.gz");
  write_gz(img, idx_bytes(2051, {3, 2, 3}, pixels()));
  write_gz(lab, idx_bytes(2049, {3}, kLabels));
  const auto ds = load_idx(img, lab);
  CHECK(ds.n == 3);
  CHECK(ds.rows == 2);
  CHECK(ds.cols == 3);
  REQUIRE(ds.images.size() == 18);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 6; ++j) CHECK(ds.images[i * 6 + j] == Approx((10 * i + j) / 255.0));
  CHECK(ds.labels == std::vector<int32_t>{7, 0, 9});
}

TEST_CASE("Pixels kept as bytes give the same floats, and truncate keeps the first images",
          "[data][idx]") {
  TempDir dir;
  const auto img = dir.file("img.gz"), lab = dir.file("lab.gz");
  write_gz(img, idx_bytes(2051, {3, 2, 3}, pixels()));
  write_gz(lab, idx_bytes(2049, {3}, kLabels));
  const auto floats = load_idx(img, lab);
  auto bytes = load_idx(img, lab, psrt::data::PixelForm::kBytes);
  CHECK(bytes.images.empty());
  REQUIRE(bytes.pixels == pixels());
  for (std::size_t i = 0; i < 3; ++i) {
    std::vector<float> a(6, -1), b(6, -2);
    floats.copy_image(i, a.data());
    bytes.copy_image(i, b.data());
    CHECK(a == b);  // bit for bit
    CHECK(std::equal(a.begin(), a.end(), floats.images.begin() + std::ptrdiff_t(6 * i)));
  }
  bytes.truncate(2);
  CHECK(bytes.n == 2);
  CHECK(bytes.pixels.size() == 12);
  CHECK(bytes.labels == std::vector<int32_t>{7, 0});
  bytes.truncate(0);  // 0: all there is
  CHECK(bytes.n == 2);
}

TEST_CASE("load_idx reads plain IDX files and full-range pixels", "[data][idx]") {
  TempDir dir;
  const auto img = dir.file("img"), lab = dir.file("lab");
  write_plain(img, idx_bytes(2051, {1, 1, 2}, {0, 255}));
  write_plain(lab, idx_bytes(2049, {1}, {4}));
  const auto ds = load_idx(img, lab);
  REQUIRE(ds.images.size() == 2);
  CHECK(ds.images[0] == 0.0f);
  CHECK(ds.images[1] == 1.0f);
  CHECK(ds.labels == std::vector<int32_t>{4});
}

TEST_CASE("load_idx reads colour (idx4) images channel by channel", "[data][idx]") {
  TempDir dir;
  const auto img = dir.file("img"), lab = dir.file("lab");
  // 2 images of 1x2 pixels with 3 channels, as (H, W, C): pixel p of channel c is 10 p + c, plus
  // 100 in the second image.
  const std::vector<unsigned char> hwc = {0, 1, 2, 10, 11, 12, 100, 101, 102, 110, 111, 112};
  write_plain(img, idx_bytes(2052, {2, 1, 2, 3}, hwc));
  write_plain(lab, idx_bytes(2049, {2}, {1, 0}));
  for (const auto form : {psrt::data::PixelForm::kFloats, psrt::data::PixelForm::kBytes}) {
    const auto ds = load_idx(img, lab, form);
    CHECK(ds.channels == 3);
    CHECK(ds.rows == 1);
    CHECK(ds.cols == 2);
    REQUIRE(ds.image_size() == 6);
    std::vector<float> second(6);
    ds.copy_image(1, second.data());
    // (C, H, W): channel 0's two pixels, then channel 1's, then channel 2's.
    const std::vector<unsigned char> want = {100, 110, 101, 111, 102, 112};
    for (std::size_t k = 0; k < 6; ++k) CHECK(second[k] == float(want[k]) / 255.0f);
  }
  // A colour file with a zero channel count is refused like any bad dimension.
  write_plain(img, idx_bytes(2052, {2, 1, 2, 0}, {}));
  CHECK_THROWS_WITH(load_idx(img, lab), Catch::Contains("bad channel count 0"));
  // Neither image magic: both are named.
  write_plain(img, idx_bytes(2053, {2, 1, 2, 3}, hwc));
  CHECK_THROWS_WITH(load_idx(img, lab), Catch::Contains("expected 2051, or 2052"));
}

TEST_CASE("load_idx errors name the file and the problem", "[data][idx]") {
  TempDir dir;
  const auto img = dir.file("img.gz"), lab = dir.file("lab.gz");
  write_gz(lab, idx_bytes(2049, {3}, kLabels));

  SECTION("bad image magic") {
    write_gz(img, idx_bytes(2049, {3, 2, 3}, pixels()));
    const auto msg = config_error([&] { load_idx(img, lab); });
    CHECK_THAT(msg, Catch::Contains(img) && Catch::Contains("magic"));
  }
  SECTION("bad label magic") {
    write_gz(img, idx_bytes(2051, {3, 2, 3}, pixels()));
    write_gz(lab, idx_bytes(2051, {3}, kLabels));
    const auto msg = config_error([&] { load_idx(img, lab); });
    CHECK_THAT(msg, Catch::Contains(lab) && Catch::Contains("magic"));
  }
  SECTION("truncated pixel data") {
    auto p = pixels();
    p.resize(p.size() - 1);
    write_gz(img, idx_bytes(2051, {3, 2, 3}, p));
    const auto msg = config_error([&] { load_idx(img, lab); });
    CHECK_THAT(msg, Catch::Contains(img) && Catch::Contains("truncated"));
  }
  SECTION("a header claiming far more pixels than the file holds costs what it holds") {
    // 32768 images of 256 x 256: 2 GiB of pixels claimed, 10 bytes there (found by fuzz_idx).
    write_gz(img, idx_bytes(2051, {32768, 256, 256}, std::vector<unsigned char>(10, 1)));
    write_gz(lab, idx_bytes(2049, {32768}, {}));
    std::string msg;
    const double grew =
        psrt::test::peak_growth_mib([&] { msg = config_error([&] { load_idx(img, lab); }); });
    CHECK_THAT(msg,
               Catch::Contains(img) && Catch::Contains("truncated") && Catch::Contains("got 10"));
    if (grew >= 0) CHECK(grew < 64);
  }
  SECTION("truncated header") {
    write_gz(img, idx_bytes(2051, {3, 2}, {}));
    const auto msg = config_error([&] { load_idx(img, lab); });
    CHECK_THAT(msg, Catch::Contains(img) && Catch::Contains("truncated"));
  }
  SECTION("truncated label data") {
    write_gz(img, idx_bytes(2051, {3, 2, 3}, pixels()));
    write_gz(lab, idx_bytes(2049, {3}, {7, 0}));
    const auto msg = config_error([&] { load_idx(img, lab); });
    CHECK_THAT(msg, Catch::Contains(lab) && Catch::Contains("truncated"));
  }
  SECTION("a gzip stream cut short") {
    write_gz(img, idx_bytes(2051, {3, 2, 3}, pixels()));
    const auto size = fs::file_size(img);
    fs::resize_file(img, size / 2);
    const auto msg = config_error([&] { load_idx(img, lab); });
    CHECK_THAT(msg, Catch::Contains(img));
  }
  SECTION("image and label counts differ") {
    write_gz(img, idx_bytes(2051, {3, 2, 3}, pixels()));
    write_gz(lab, idx_bytes(2049, {2}, {7, 0}));
    const auto msg = config_error([&] { load_idx(img, lab); });
    CHECK_THAT(msg, Catch::Contains(lab) && Catch::Contains("3 images but 2 labels"));
  }
  SECTION("zero rows") {
    write_gz(img, idx_bytes(2051, {3, 0, 3}, {}));
    const auto msg = config_error([&] { load_idx(img, lab); });
    CHECK_THAT(msg, Catch::Contains(img) && Catch::Contains("row count"));
  }
  SECTION("trailing bytes") {
    auto p = pixels();
    p.push_back(1);
    write_gz(img, idx_bytes(2051, {3, 2, 3}, p));
    const auto msg = config_error([&] { load_idx(img, lab); });
    CHECK_THAT(msg, Catch::Contains(img) && Catch::Contains("trailing"));
  }
  SECTION("missing file") {
    const auto missing = dir.file("nope.gz");
    const auto msg = config_error([&] { load_idx(missing, lab); });
    CHECK_THAT(msg, Catch::Contains(missing) && Catch::Contains("no such file"));
    fs::create_symlink(missing, dir.file("dangling.gz"));
    CHECK_THAT(config_error([&] { load_idx(dir.file("dangling.gz"), lab); }),
               Catch::Contains("dangling.gz: a symbolic link to nothing"));
    fs::create_symlink(dir.file("loop.gz"), dir.file("loop.gz"));  // was "a link to nothing"
    CHECK_THAT(config_error([&] { load_idx(dir.file("loop.gz"), lab); }),
               Catch::Contains("loop.gz: a loop of symbolic links"));
  }
  SECTION("a gzip stream without its trailer, the check of what was read") {
    // A changed byte went unnoticed: zlib's end of a stream cut short read as the file's end.
    write_gz(img, idx_bytes(2051, {3, 2, 3}, pixels()));
    fs::resize_file(img, fs::file_size(img) - 8);
    CHECK_THAT(config_error([&] { load_idx(img, lab); }),
               Catch::Contains(img) && Catch::Contains("a gzip file cut short?"));
  }
  SECTION("a FIFO, which blocked the open for ever, and a folder") {
    const auto fifo = dir.file("fifo");
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    CHECK_THAT(config_error([&] { load_idx(fifo, lab); }),
               Catch::Contains(fifo + ": not a regular file"));
    CHECK_THAT(config_error([&] { load_idx(dir.file(""), lab); }),
               Catch::Contains("not a regular file"));
  }
}

TEST_CASE("load_split reads a folder's pair under plain names or .gz and checks the classes",
          "[data][idx]") {
  TempDir dir;
  // 3 images of 2x3, labels 0, 3, 1.
  const std::vector<unsigned char> pixels(18, 51), labels = {0, 3, 1};
  write_plain(dir.file("train-images-idx3-ubyte"), idx_bytes(2051, {3, 2, 3}, pixels));
  write_plain(dir.file("train-labels-idx1-ubyte"), idx_bytes(2049, {3}, labels));
  const auto ds = psrt::data::load_split(dir.file(""), true, 4);
  CHECK(ds.n == 3);
  CHECK(ds.rows == 2);
  CHECK(ds.cols == 3);
  CHECK(ds.labels == std::vector<int32_t>{0, 3, 1});
  CHECK(ds.images[0] == 0.2f);
  // A label at or above the class count names the file and the key.
  try {
    (void)psrt::data::load_split(dir.file(""), true, 3);
    FAIL("label 3 accepted with 3 classes");
  } catch (const psrt::ConfigError& e) {
    CHECK_THAT(e.what(), Catch::Contains("train-labels-idx1-ubyte: label 3 is not in [0, 3)") &&
                             Catch::Contains("data.classes"));
  }
  // Where both names exist the .gz one is read.
  write_gz(dir.file("train-labels-idx1-ubyte.gz"), idx_bytes(2049, {3}, {2, 2, 2}));
  write_gz(dir.file("train-images-idx3-ubyte.gz"), idx_bytes(2051, {3, 2, 3}, pixels));
  CHECK(psrt::data::load_split(dir.file(""), true, 4).labels == std::vector<int32_t>{2, 2, 2});
  // data.path that is no folder (a file, or empty) named a file inside it that could not be.
  CHECK_THROWS_WITH(psrt::data::load_split(dir.file("train-images-idx3-ubyte"), true, 4),
                    Catch::Contains("data.path: '") && Catch::Contains("' is not a folder"));
  // The test split is named t10k-*; missing, it names the .gz file it looked for.
  CHECK_THROWS_WITH(psrt::data::load_split(dir.file(""), false, 4),
                    Catch::Contains("t10k-images-idx3-ubyte.gz"));
  // Colour images may be named idx4 where no idx3 name exists.
  write_plain(dir.file("t10k-images-idx4-ubyte"), idx_bytes(2052, {3, 2, 3, 2}, {}));
  write_plain(dir.file("t10k-labels-idx1-ubyte"), idx_bytes(2049, {3}, labels));
  CHECK_THROWS_WITH(psrt::data::load_split(dir.file(""), false, 4),
                    Catch::Contains("t10k-images-idx4-ubyte: truncated"));
  write_plain(dir.file("t10k-images-idx4-ubyte"),
              idx_bytes(2052, {3, 2, 3, 2}, std::vector<unsigned char>(36, 51)));
  CHECK(psrt::data::load_split(dir.file(""), false, 4).channels == 2);
}

TEST_CASE("load_split reads the real Fashion-MNIST training set when it is installed",
          "[data][idx][fashion]") {
  const std::string dir = "/usr/share/datasets/fashion-mnist";
  if (!fs::exists(dir + "/train-images-idx3-ubyte.gz")) {
    WARN("Fashion-MNIST not found at " << dir << ": skipped");
    return;
  }
  const auto ds = psrt::data::load_split(dir, true, 10);
  CHECK(ds.n == 60000);
  CHECK(ds.rows == 28);
  CHECK(ds.cols == 28);
  CHECK(ds.images.size() == 60000u * 28 * 28);
  REQUIRE(ds.labels.size() == 60000u);
  std::vector<int> per_class(10, 0);
  for (int32_t l : ds.labels) {
    REQUIRE(l >= 0);
    REQUIRE(l <= 9);
    ++per_class[l];
  }
  for (int c : per_class) CHECK(c == 6000);  // Fashion-MNIST's training set is balanced
  float lo = 1, hi = 0;
  for (float p : ds.images) {
    lo = std::min(lo, p);
    hi = std::max(hi, p);
  }
  CHECK(lo == 0.0f);
  CHECK(hi == 1.0f);
}
