// psrt-bench-compress: encode and decode throughput per codec (GB/s of fp32 input) beside memcpy
// of the same buffer in the same run, the compression ratio, and the hierarchical rule's effect.
// With a CUDA device: LACO's CUDA encode beside a device-to-device copy (bench_gpu.cc).
//   psrt-bench-compress [--smoke] [--elements N] [--reps R] [--codecs a,b,...] [--help]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "compress/codec.h"
#include "compress/density_schedule.h"
#include "compress/lads.h"
#include "compress/log_quant.h"
#include "compress/registry.h"
#include "compress/wire_format.h"
#include "bench/compress/bench_util.h"

namespace psrt::compress {
namespace {

using Clock = std::chrono::steady_clock;
using bench::gaussian;
using bench::gbps;
using bench::model_tensors;

struct Options {
  size_t elements = size_t{1} << 22;  // 16 MiB of fp32
  int reps = 10;
  bool smoke = false;
  std::vector<std::string> codecs = {"none", "laco", "topk", "graddrop", "signsgd"};
};

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t end = std::min(s.find(',', start), s.size());
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

template <typename Fn>
double seconds_per_rep(int reps, Fn&& fn) {
  fn();  // warm
  const auto start = Clock::now();
  for (int r = 0; r < reps; ++r) fn();
  return std::chrono::duration<double>(Clock::now() - start).count() / reps;
}

int bench_codecs(const Options& opt) {
  const size_t n = opt.elements;
  const size_t bytes = n * sizeof(float);
  // Iteration t's gradient is a window of a pool of 2n Gaussians at a step-dependent offset: fresh,
  // independent values per element each iteration (as real gradients are to error feedback; a
  // few repeated vectors would pile up correlated residuals), without generating them in the
  // timed loop. Offsets are multiples of 16 floats: a tensor's gradient starts 64-byte aligned.
  const std::vector<float> pool = gaussian(2 * n, 1);
  auto gradient = [&](int64_t t) {
    const size_t offset = static_cast<size_t>(t) * 104729u % n / 16 * 16;
    return std::span<const float>(pool.data() + offset, n);
  };
  std::vector<float> copy(n);
  const double t_memcpy = seconds_per_rep(opt.reps, [&] {
    std::memcpy(copy.data(), pool.data(), bytes);
  });
  const double memcpy_gbps = gbps(bytes, t_memcpy);
  std::printf("CPU, one thread, %zu fp32 elements (%.1f MiB) per chunk, %d reps\n", n,
              static_cast<double>(bytes) / (1 << 20), opt.reps);
  std::printf("memcpy of the same buffer: %.2f GB/s\n", memcpy_gbps);
  std::printf("ef: error feedback no / yes / +mc (and momentum correction 0.9)\n\n");
  std::printf("%-10s %-4s %10s %10s %10s %10s %10s %10s\n", "codec", "ef", "enc GB/s", "enc/memcpy",
              "dec GB/s", "dec/memcpy", "density", "ratio");
  // Variants: without error feedback, with it, and with momentum correction (0.9) over it.
  enum class Variant { kNoEf, kEf, kMomentum };
  for (const std::string& name : opt.codecs) {
    for (Variant v : {Variant::kNoEf, Variant::kEf, Variant::kMomentum}) {
      if (name == "none" && v != Variant::kNoEf) continue;
      const bool ef = v != Variant::kNoEf;
      CodecConfig c;
      c.codec = name;
      c.error_feedback = ef;
      if (v == Variant::kMomentum) c.momentum = 0.9;
      c.calibration_iters = 1;
      c.warmup_iters = 0;
      c.hierarchical = false;
      Result<std::unique_ptr<Codec>> made = make_codec(c);
      if (!made) {
        std::fprintf(stderr, "%s\n", made.status().message().c_str());
        return 1;
      }
      const Codec& codec = **made;
      auto state = codec.make_state(TensorInfo{.num_elements = static_cast<int64_t>(n)});
      std::vector<uint8_t> payload;
      int64_t t = 0;
      auto encode = [&] {
        const Status s =
            codec.encode(*state, ChunkInput{.values = gradient(t), .iteration = t}, payload);
        if (!s) std::fprintf(stderr, "encode: %s\n", s.message().c_str());
        ++t;
      };
      for (int k = 0; k < 3; ++k) encode();  // past calibration, settle the residual
      const double t_enc = seconds_per_rep(opt.reps, encode);
      Result<PayloadView> view = parse_payload(payload);
      const double density = view ? static_cast<double>(view->header.count) / n : 0;
      std::vector<float> out(n, 0.0f);
      const double t_dec = seconds_per_rep(opt.reps, [&] {
        const Status s = codec.decode_accumulate(payload, out);
        if (!s) std::fprintf(stderr, "decode: %s\n", s.message().c_str());
      });
      const char* ef_text = v == Variant::kNoEf ? "no" : v == Variant::kEf ? "yes" : "+mc";
      std::printf("%-10s %-4s %10.2f %10.2f %10.2f %10.2f %10.4f %10.1f\n", name.c_str(), ef_text,
                  gbps(bytes, t_enc), t_memcpy / t_enc, gbps(bytes, t_dec), t_memcpy / t_dec,
                  density, static_cast<double>(bytes) / payload.size());
    }
  }
  return 0;
}

int bench_hierarchy(const Options& opt) {
  const std::vector<int64_t> tensors = model_tensors(opt.smoke);
  const int layers = static_cast<int>(tensors.size());
  std::printf("\nHierarchical rule on a ResNet-50-like model (%d tensors), LACO, density 0.01,\n"
              "dense_below 1024, Gaussian gradients, third iteration (after calibration):\n",
              layers);
  std::vector<double> per_tensor[2];
  int64_t in = 0, out[2] = {0, 0}, sent[2] = {0, 0};
  for (int h = 0; h < 2; ++h) {
    CodecConfig c;
    c.codec = "laco";
    c.calibration_iters = 1;
    c.warmup_iters = 0;
    c.hierarchical = h == 1;
    auto codec = std::move(*make_codec(c));
    std::vector<uint8_t> payload;
    for (int l = 0; l < layers; ++l) {
      const auto n = static_cast<size_t>(tensors[static_cast<size_t>(l)]);
      auto state = codec->make_state(
          TensorInfo{.num_elements = static_cast<int64_t>(n), .layer = l, .num_layers = layers});
      for (int64_t t = 0; t < 3; ++t) {
        const auto g = gaussian(n, static_cast<uint64_t>(l * 10 + t));
        if (!codec->encode(*state, ChunkInput{.values = g, .iteration = t}, payload)) return 1;
      }
      Result<PayloadView> view = parse_payload(payload);
      if (!view) return 1;
      if (h == 0) in += static_cast<int64_t>(n * 4);
      out[h] += static_cast<int64_t>(payload.size());
      sent[h] += view->header.count;
      per_tensor[h].push_back(static_cast<double>(view->header.count) / static_cast<double>(n));
    }
  }
  std::printf("%-8s %10s %8s %12s %12s\n", "tensor", "elements", "depth", "flat dens.",
              "hier. dens.");
  for (int l : {0, 2, 4, layers / 2, layers - 4, layers - 2, layers - 1}) {
    std::printf("%-8d %10lld %8.2f %12.4f %12.4f\n", l,
                static_cast<long long>(tensors[static_cast<size_t>(l)]),
                static_cast<double>(l) / (layers - 1), per_tensor[0][static_cast<size_t>(l)],
                per_tensor[1][static_cast<size_t>(l)]);
  }
  int64_t elements = 0;
  for (int64_t n : tensors) elements += n;
  std::printf("%-14s %12s %12s %10s\n", "rule", "payload B", "ratio", "density");
  for (int h = 0; h < 2; ++h) {
    std::printf("%-14s %12lld %12.1f %10.4f\n", h ? "hierarchical" : "flat",
                static_cast<long long>(out[h]),
                static_cast<double>(in) / static_cast<double>(out[h]),
                static_cast<double>(sent[h]) / static_cast<double>(elements));
  }
  return 0;
}

}  // namespace
}  // namespace psrt::compress

namespace {

// A whole decimal number from 1 to `max`, else 0 (strtoull took "-5" for 2^64 - 5 and the bench
// ended in std::length_error).
uint64_t count_arg(const char* text, uint64_t max) {
  const std::string s = text;
  if (s.empty() || s.size() > 19 || s.find_first_not_of("0123456789") != std::string::npos) {
    return 0;
  }
  const uint64_t v = std::stoull(s);
  return v <= max ? v : 0;
}

constexpr const char* kUsage =
    "usage: psrt-bench-compress [--smoke] [--elements N] [--reps R] [--codecs a,b,...]\n";

// Every codec is checked before the memcpy baseline: an unknown one failed only when its turn
// came, after the baseline and the codecs before it had run, with exit 1.
bool check_codecs(const std::vector<std::string>& codecs) {
  const std::vector<std::string> known = psrt::compress::default_registry().names();
  std::string list;
  for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
  if (codecs.empty()) {
    std::fprintf(stderr, "psrt-bench-compress: --codecs: no codec given (%s)\n", list.c_str());
    return false;
  }
  for (const std::string& name : codecs) {
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      std::fprintf(stderr, "psrt-bench-compress: --codecs: '%s' is not one of %s\n",
                   name.c_str(), list.c_str());
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  psrt::compress::Options opt;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);  // asked for: not an error
      return 0;
    } else if (a == "--smoke") {
      opt.smoke = true;
      opt.elements = size_t{1} << 16;
      opt.reps = 3;
    } else if (a == "--elements" && i + 1 < argc) {
      opt.elements = count_arg(argv[++i], uint64_t(1) << 30);  // 4 GiB of floats
    } else if (a == "--reps" && i + 1 < argc) {
      opt.reps = int(count_arg(argv[++i], 1000000));
    } else if (a == "--codecs" && i + 1 < argc) {
      opt.codecs = psrt::compress::split_commas(argv[++i]);
    } else {
      std::fputs(kUsage, stderr);
      return 2;
    }
  }
  if (opt.elements == 0 || opt.reps < 1) {
    std::fprintf(stderr, "psrt-bench-compress: --elements (1 to 2^30) and --reps (1 to 10^6) must "
                         "be whole numbers in range\n");
    return 2;
  }
  if (!check_codecs(opt.codecs)) return 2;
  if (int rc = psrt::compress::bench_codecs(opt); rc != 0) return rc;
  if (int rc = psrt::compress::bench_hierarchy(opt); rc != 0) return rc;
  return psrt::compress::bench::bench_gpu(opt.smoke, opt.reps);
}
