// psrt-bench-engine: single-process training throughput (samples/s) of the native engine on
// LeNet-5 and vgg-small, beside PyTorch CPU on the same model and batch size measured in the same
// run (bench/engine/torch_bench.py through /usr/bin/python3), and their ratio. Both sides run one
// thread: OpenBLAS here, torch.set_num_threads(1) there. A step is set_batch, forward over all
// layers, backward over all layers with each layer's SGD update as soon as its gradients are ready.
// Then the GPU column (bench_engine_gpu.h): the GPU network's step beside PyTorch on CUDA, or "no
// GPU" where there is no device (or no CUDA-enabled torch).
//   psrt-bench-engine [--smoke] [--batch B] [--steps S] [--models lenet5,vgg-small]
//                     [--no-torch] [--profile] [--python PATH] [--torch-script PATH] [--help]
#include <cblas.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench/engine/bench_engine_gpu.h"
#include "engine/network.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  int batch = 64;
  int steps = 30;
  int warmup = 5;
  bool smoke = false;
  bool torch = true;
  bool profile = false;  // per-layer forward/backward ms of the engine
  std::vector<std::string> models = {"lenet5", "vgg-small"};
  std::string python = "/usr/bin/python3";
  std::string torch_script = PSRT_TORCH_BENCH_SCRIPT;
};

struct Measure {
  double samples_per_s = 0;
  double step_ms = 0;
  std::string note;  // why there is no figure
};

constexpr const char* kUsage =
    "usage: psrt-bench-engine [--smoke] [--batch B] [--steps S] [--models a,b] [--no-torch] "
    "[--profile] [--python PATH] [--torch-script PATH]\n";

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr, "psrt-bench-engine: %s\n%s", why, kUsage);
  std::exit(2);
}

// A wrong value: one line, exit 2 (the usage would only repeat the flags).
[[noreturn]] void bad_value(const std::string& why) {
  std::fprintf(stderr, "psrt-bench-engine: %s\n", why.c_str());
  std::exit(2);
}

int positive(const char* flag, const char* value) {
  char* end = nullptr;
  const long v = std::strtol(value, &end, 10);
  if (end == value || *end != '\0' || v < 1 || v > 1000000) {
    // the range is said: "a positive integer" refused 100000000 without saying why
    bad_value(std::string(flag) + " needs an integer from 1 to 1000000, not '" + value + "'");
  }
  return static_cast<int>(v);
}

// Every model is checked before the first table line: an unknown one failed only when its turn
// came, after the headers (and the models before it) were printed, with exit 1.
void check_models(const std::vector<std::string>& models) {
  if (models.empty()) bad_value("--models: no model given");
  for (const std::string& arch : models) {
    psrt::engine::NetSpec spec;
    spec.arch = arch;
    try {
      psrt::engine::describe_network(spec);  // build_network's checks, no parameters made
    } catch (const std::exception& e) {
      bad_value("--models: " + std::string(e.what()));
    }
  }
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage((a + " needs a value").c_str());
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (a == "--smoke") {
      o.smoke = true;
    } else if (a == "--batch") {
      o.batch = positive("--batch", value());
    } else if (a == "--steps") {
      o.steps = positive("--steps", value());
    } else if (a == "--profile") {
      o.profile = true;
    } else if (a == "--no-torch") {
      o.torch = false;
    } else if (a == "--python") {
      o.python = value();
    } else if (a == "--torch-script") {
      o.torch_script = value();
    } else if (a == "--models") {
      o.models.clear();
      std::stringstream ss(value());
      for (std::string m; std::getline(ss, m, ',');) o.models.push_back(m);
    } else {
      usage(("unknown option " + a).c_str());
    }
  }
  check_models(o.models);
  if (o.smoke) {
    o.batch = std::min(o.batch, 8);
    o.steps = 2;
    o.warmup = 1;
  }
  return o;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Mean forward and backward ms of each layer over o.steps steps (SGD updates left out).
void print_profile(psrt::engine::Network& net, const Options& o) {
  const auto& layers = net.desc().layers;
  std::vector<double> fwd(layers.size()), bwd(layers.size());
  for (int s = 0; s < o.steps; ++s) {
    for (std::size_t i = 0; i < layers.size(); ++i) {
      const auto t0 = Clock::now();
      net.forward_layer(i);
      fwd[i] += std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    }
    for (std::size_t i = layers.size(); i-- > 0;) {
      const auto t0 = Clock::now();
      net.backward_layer(i);
      bwd[i] += std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    }
  }
  std::printf("  %-10s %-12s %10s %10s\n", "layer", "kind", "fwd ms", "bwd ms");
  for (std::size_t i = 0; i < layers.size(); ++i) {
    std::printf("  %-10s %-12s %10.3f %10.3f\n", layers[i].name.c_str(), layers[i].kind.c_str(),
                fwd[i] / o.steps, bwd[i] / o.steps);
  }
}

Measure measure_engine(const std::string& arch, const Options& o) {
  psrt::engine::NetSpec spec;
  spec.arch = arch;
  auto net = psrt::engine::build_network(spec, 1);
  const auto& layers = net->desc().layers;
  std::mt19937_64 gen(7);
  std::vector<float> images(static_cast<std::size_t>(o.batch) * net->input_size());
  std::vector<int32_t> labels(static_cast<std::size_t>(o.batch));
  for (float& v : images) v = static_cast<float>(gen() >> 40) * 0x1.0p-24f;
  for (int32_t& l : labels) l = static_cast<int32_t>(gen() % 10);
  auto step = [&] {
    net->set_batch(images.data(), labels.data(), o.batch);
    for (std::size_t i = 0; i < layers.size(); ++i) net->forward_layer(i);
    for (std::size_t i = layers.size(); i-- > 0;) {
      net->backward_layer(i);
      for (const uint32_t key : layers[i].tensors) {
        const auto p = net->param(key);
        const auto g = net->grad(key);
        for (std::size_t j = 0; j < p.size(); ++j) p[j] -= 0.01f * g[j];
      }
    }
  };
  for (int i = 0; i < o.warmup; ++i) step();
  std::vector<double> ms;
  for (int i = 0; i < o.steps; ++i) {
    const auto t0 = Clock::now();
    step();
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  const double m = median(ms);
  if (o.profile) print_profile(*net, o);
  return {o.batch / (m / 1e3), m, ""};
}

// Runs torch_bench.py (on `device`: cpu or cuda) and parses its one line.
Measure measure_torch(const std::string& arch, const Options& o, const std::string& device) {
  if (!o.torch) return {0, 0, "--no-torch"};
  const std::string cmd = "'" + o.python + "' '" + o.torch_script + "' --model " + arch +
                          " --batch " + std::to_string(o.batch) + " --steps " +
                          std::to_string(o.steps) + " --warmup " + std::to_string(o.warmup) +
                          " --device " + device + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr)
    return {0, 0, "PyTorch not installed: skipped (cannot run " + o.python + ")"};
  std::string out;
  std::array<char, 512> buf{};
  while (std::fgets(buf.data(), buf.size(), pipe) != nullptr) out += buf.data();
  const int rc = pclose(pipe);
  Measure m;
  if (std::sscanf(out.c_str(), "samples_per_s %lf step_ms %lf", &m.samples_per_s, &m.step_ms) ==
          2 &&
      rc == 0) {
    return m;
  }
  if (out.rfind("unavailable:", 0) == 0 || out.find("No such file") != std::string::npos ||
      out.find("not found") != std::string::npos) {
    return {0, 0, "PyTorch " + std::string(device == "cuda" ? "with CUDA " : "") +
                      "not available: skipped (" + out.substr(0, out.find('\n')) + ")"};
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  if (out.empty()) return {0, 0, "PyTorch failed: no output, exit status " + std::to_string(rc)};
  const auto last = out.rfind('\n');
  return {0, 0, "PyTorch failed: " + (last == std::string::npos ? out : out.substr(last + 1))};
}

// The GPU network beside PyTorch on CUDA, same models and batch. Targets (issue 16): psrt's step
// within 1.2x of PyTorch's.
void print_gpu_column(const Options& o) {
  std::printf(
      "\nGPU: psrt GpuNetwork step (no optimizer step) beside PyTorch on CUDA (with SGD)\n");
  std::printf("%-10s %12s %12s %8s %10s\n", "model", "psrt gpu ms", "torch ms", "ratio", "<= 1.2x");
  for (const std::string& arch : o.models) {
    const psrt::bench::GpuStep ours =
        psrt::bench::measure_gpu_step(arch, o.batch, o.steps, o.warmup);
    if (!ours.note.empty()) {
      std::printf("%-10s %s\n", arch.c_str(), ours.note.c_str());
      continue;
    }
    const Measure theirs = measure_torch(arch, o, "cuda");
    if (!theirs.note.empty()) {
      std::printf("%-10s %12.3f   %s\n", arch.c_str(), ours.step_ms, theirs.note.c_str());
      continue;
    }
    const double ratio = ours.step_ms / theirs.step_ms;
    std::printf("%-10s %12.3f %12.3f %7.2fx %10s\n", arch.c_str(), ours.step_ms, theirs.step_ms,
                ratio, ratio <= 1.2 ? "MET" : "MISSED");
  }
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  openblas_set_num_threads(1);
  std::printf("psrt-bench-engine: batch %d, %d timed steps (median), 1 thread%s\n", o.batch,
              o.steps, o.smoke ? ", smoke" : "");
  std::printf("%-10s %14s %12s %14s %12s %8s\n", "model", "psrt samples/s", "psrt ms",
              "torch samples/s", "torch ms", "ratio");
  int failures = 0;
  for (const std::string& arch : o.models) {
    Measure ours;
    try {
      ours = measure_engine(arch, o);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "psrt-bench-engine: %s: %s\n", arch.c_str(), e.what());
      ++failures;
      continue;
    }
    const Measure theirs = measure_torch(arch, o, "cpu");
    if (theirs.note.empty()) {
      std::printf("%-10s %14.1f %12.3f %14.1f %12.3f %7.2fx\n", arch.c_str(), ours.samples_per_s,
                  ours.step_ms, theirs.samples_per_s, theirs.step_ms,
                  ours.samples_per_s / theirs.samples_per_s);
    } else {
      std::printf("%-10s %14.1f %12.3f   %s\n", arch.c_str(), ours.samples_per_s, ours.step_ms,
                  theirs.note.c_str());
    }
    std::fflush(stdout);
  }
  print_gpu_column(o);
  return failures == 0 ? 0 : 1;
}
