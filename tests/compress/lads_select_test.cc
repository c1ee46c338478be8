// The CUDA select pass's bookkeeping (compress/lads_select.h, the functions the kernel calls) run
// on the CPU the way the kernel runs it: 4096-element tiles of 256 threads x 16 elements, a scan
// within each tile, and a look-back across tiles that combines aggregates from the right and stops
// at an inclusive prefix. Its varints, codes, indices and bitmap must equal the CPU encoder's.
#include <catch2/catch.hpp>

#include <cstring>
#include <random>
#include <vector>

#include "compress/cpu_kernels.h"
#include "compress/lads.h"
#include "compress/lads_select.h"
#include "compress/log_quant.h"
#include "compress/payload_writer.h"
#include "compress/wire_format.h"
#include "tests/compress/test_util.h"

using namespace psrt::compress;
using psrt::Result;

namespace {

constexpr int kThreads = 256, kItems = 16;
constexpr uint32_t kTile = kThreads * kItems;

struct Emulated {
  std::vector<uint8_t> varints, values;
  std::vector<uint32_t> indices, bitmap;
  uint32_t kept = 0, varint_total = 0;
};

// The kernel's select pass over a whole chunk. `rng` decides where the look-back finds an
// inclusive prefix (any tile it passes may have published one), so that every grouping of the
// associative combine is exercised.
Emulated emulate(const std::vector<float>& x, float tau, int quant_bits, const float* t,
                 std::mt19937_64& rng) {
  const auto n = static_cast<uint32_t>(x.size());
  const uint32_t tiles = (n + kTile - 1) / kTile;
  Emulated e;
  e.varints.assign(5 * size_t{n} + 5, 0);
  e.values.assign(4 * size_t{n} + 4, 0);
  e.indices.assign(n + 1, 0);
  e.bitmap.assign(tiles * kTile / 32, 0);
  std::vector<KeptSummary> aggregate(tiles), inclusive(tiles);
  const CombineKept combine;
  for (uint32_t tile = 0; tile < tiles; ++tile) {
    const uint32_t base = tile * kTile;
    float v[kThreads][kItems];
    uint32_t mask[kThreads];
    KeptSummary mine[kThreads], excl[kThreads];
    KeptSummary running{0, 0, 0, 0};
    for (int th = 0; th < kThreads; ++th) {
      const uint32_t first = base + static_cast<uint32_t>(th * kItems);
      for (int k = 0; k < kItems; ++k) v[th][k] = first + k < n ? x[first + k] : 0.0f;  // oob 0
      mine[th] = summarize_kept(v[th], kItems, first, n, tau, &mask[th]);
      excl[th] = running;
      running = combine(running, mine[th]);
    }
    for (int th = 0; th < kThreads; th += 2) {
      const uint32_t first = base + static_cast<uint32_t>(th * kItems);
      if (first < n) e.bitmap[first / 32] = mask[th] | mask[th + 1] << 16;
    }
    aggregate[tile] = running;
    KeptSummary prefix{0, 0, 0, 0};
    for (uint32_t p = tile; p-- > 0;) {
      const bool use_inclusive = p == 0 || rng() % 3 == 0;
      prefix = combine(use_inclusive ? inclusive[p] : aggregate[p], prefix);
      if (use_inclusive) break;
    }
    inclusive[tile] = combine(prefix, running);
    for (int th = 0; th < kThreads; ++th) {
      write_kept(v[th], kItems, mask[th], base + static_cast<uint32_t>(th * kItems),
                 combine(prefix, excl[th]), quant_bits, t, e.varints.data(), e.values.data(),
                 e.indices.data());
    }
  }
  const KeptSummary total = tiles == 0 ? KeptSummary{0, 0, 0, 0} : inclusive[tiles - 1];
  e.kept = total.count;
  e.varint_total = varint_bytes(total);
  return e;
}

}  // namespace

TEST_CASE("the CUDA select pass's bookkeeping gives the CPU's indices, varints and codes",
          "[compress][kernels]") {
  std::mt19937_64 rng(5);
  const LogCodebook book(12);
  for (size_t n : {size_t{1}, size_t{17}, size_t{4095}, size_t{4096}, size_t{4097},
                   size_t{3 * 4096 + 1234}, size_t{100000}}) {
    for (float alpha : {0.0f, 0.5f, 2.576f, 4.0f}) {
      for (int bits : {8, 32}) {
        INFO("n " << n << " alpha " << alpha << " bits " << bits);
        // Wide gaps between kept elements at alpha 4 (varints of 2 and 3 bytes), none at 0.
        const auto g = testing::gaussian(n, n + static_cast<uint64_t>(alpha * 10) + bits);
        const LadsParams params{.alpha = alpha, .quant_bits = bits, .log_range = 12};
        LadsScratch scratch;
        std::vector<uint8_t> payload;
        Result<LadsResult> r = lads_encode(g, params, book, scratch, payload);
        REQUIRE(r.is_ok());
        float t[kLogLevels];
        book.thresholds(r->scale, t);
        std::vector<uint32_t> indices;
        std::vector<uint8_t> codes;
        select_and_code(g, r->threshold, t, indices, codes);
        REQUIRE(indices.size() == r->kept);

        const Emulated e = emulate(g, r->threshold, bits, t, rng);
        REQUIRE(e.kept == r->kept);
        // The CPU's delta varints: written whole when the payload's length makes a bitmap larger.
        std::vector<uint8_t> want;
        write_sparse_log8(CodecId::kLaco, UINT32_MAX - 7, indices, codes, 12, r->scale, want);
        const size_t vbytes = varint_index_bytes(indices);
        REQUIRE(e.varint_total == vbytes);
        CHECK(std::memcmp(e.varints.data(), want.data() + kHeaderBytes, vbytes) == 0);
        CHECK(std::equal(indices.begin(), indices.end(), e.indices.begin()));
        for (size_t j = 0; j < indices.size(); ++j) {
          if (bits == 8) {
            REQUIRE(e.values[j] == codes[j]);
          } else {
            REQUIRE(std::memcmp(&e.values[4 * j], &g[indices[j]], 4) == 0);
          }
        }
        std::vector<uint32_t> bitmap(e.bitmap.size(), 0);
        for (const uint32_t i : indices) bitmap[i / 32] |= 1u << (i % 32);
        CHECK(bitmap == e.bitmap);
      }
    }
  }
}

TEST_CASE("CombineKept is associative and has an identity", "[compress][kernels]") {
  std::mt19937_64 rng(9);
  const CombineKept combine;
  auto random_summary = [&](uint32_t from) {
    if (rng() % 4 == 0) return KeptSummary{0, 0, 0, 0};
    const uint32_t first = from + static_cast<uint32_t>(rng() % 100000);
    const uint32_t last = first + static_cast<uint32_t>(rng() % 300000);
    return KeptSummary{1 + static_cast<uint32_t>(rng() % 50), first, last,
                       static_cast<uint32_t>(rng() % 1000)};
  };
  auto same = [](const KeptSummary& a, const KeptSummary& b) {
    return a.count == b.count && (a.count == 0 || (a.first == b.first && a.last == b.last &&
                                                   a.bytes == b.bytes));
  };
  for (int i = 0; i < 2000; ++i) {
    const KeptSummary a = random_summary(0);
    const KeptSummary b = random_summary(a.count ? a.last + 1 : 0);
    const KeptSummary c = random_summary(b.count ? b.last + 1 : (a.count ? a.last + 1 : 0));
    CHECK(same(combine(combine(a, b), c), combine(a, combine(b, c))));
    CHECK(same(combine(KeptSummary{0, 0, 0, 0}, a), a));
    CHECK(same(combine(a, KeptSummary{0, 0, 0, 0}), a));
  }
}
