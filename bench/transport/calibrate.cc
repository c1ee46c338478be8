#include "bench/transport/calibrate.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <span>
#include <stdexcept>
#include <vector>

#include "bench/transport/psrt_rig.h"
#include "core/durable_file.h"

namespace psrt::bench {

namespace {

using Clock = std::chrono::steady_clock;

struct Point {
  uint64_t bytes;
  uint32_t count;  // tensors per stream
  int reps;
  double us = 0;  // per push-and-reply pair (median over reps)
};

void measure(std::vector<Point>& points) {
  ModelDesc model;
  model.name = "calibration";
  std::vector<uint32_t> first;  // first layer of each point
  for (const auto& p : points) {
    first.push_back(static_cast<uint32_t>(model.layers.size()));
    for (uint32_t i = 0; i < p.count; ++i) {
      LayerDesc layer;
      layer.name = "s";  // appended: GCC 12's -Wrestrict misfires on "s" + std::string
      layer.name += std::to_string(p.bytes);
      layer.name += "_";
      layer.name += std::to_string(i);
      model.add_layer(layer, {{layer.name, p.bytes / sizeof(float)}});
    }
  }
  RigOptions o;
  o.chunk_bytes = 4u << 20;  // every tensor one message
  o.credit_bytes = 4u << 20;
  // Sizes take turns, stream by stream, so that a busy spell of the machine hits all of them.
  std::vector<std::vector<double>> us(points.size());
  std::vector<std::shared_ptr<const std::vector<float>>> grads;
  for (const auto& p : points) {
    grads.push_back(std::make_shared<const std::vector<float>>(p.bytes / 4, 1e-3f));
  }
  with_psrt(model, o, [&](PsClient& client) {
    for (int r = 0; r <= points.front().reps; ++r) {  // stream 0 warms up
      for (std::size_t i = 0; i < points.size(); ++i) {
        const Point& p = points[i];
        const auto t0 = Clock::now();
        for (uint32_t j = 0; j < p.count; ++j) client.push(first[i] + j, uint64_t(r), grads[i]);
        for (uint32_t j = 0; j < p.count; ++j) client.wait_layer(first[i] + j, uint64_t(r) + 1);
        const double d = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
        if (r > 0) us[i].push_back(d / p.count);
      }
    }
  });
  for (std::size_t i = 0; i < points.size(); ++i) points[i].us = median(us[i]);
}

// The fit: t = m + c * bytes (us), and its largest relative error.
struct Fit {
  double m, c, worst;
};

// psrt-sim's calibration YAML at `path`: formatted in memory, then written whole or not at all
// (unchecked fprintf and fclose on a full disk left an empty file and said "wrote"). Returns 0,
// or 1 with the file and the system's reason on stderr.
int write_calibration(const std::string& path, bool smoke, Fit fit, const std::string& sizes) {
  const auto [m, c, worst] = fit;
  char* text = nullptr;
  std::size_t size = 0;
  std::FILE* f = ::open_memstream(&text, &size);
  if (!f) {
    std::fprintf(stderr, "psrt-bench-transport: %s: %s\n", path.c_str(), std::strerror(errno));
    return 1;
  }
  char host[256] = "?";
  ::gethostname(host, sizeof host - 1);
  const std::time_t now = std::time(nullptr);
  char when[64];
  std::strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  std::fprintf(
      f,
      "# psrt-sim calibration (scheduler/sim/calibration.h): what the runtime pays per\n"
      "# message and per byte beside the link. Streams of push-and-reply pairs between\n"
      "# one worker and one server on loopback; least squares (relative errors) t = m + c * bytes\n"
      "# per pair;"
      " each side is charged m / 2 per message (push or reply) and c per received byte.\n"
      "made_by: \"psrt-bench-transport --calibrate%s\"\n"
      "measured: \"%s on %s (%ld cores online)\"\n"
      "sizes: \"bytes:us per pair: %s\"\n"
      "fit: \"m = %.3f us, c = %.5f ns/byte, largest error %.1f%%\"\n"
      "worker_message_us: %.3f\n"
      "server_message_us: %.3f\n"
      "worker_byte_ns: %.5f\n"
      "server_byte_ns: %.5f\n",
      smoke ? " --smoke" : "", when, host, ::sysconf(_SC_NPROCESSORS_ONLN), sizes.c_str(), m,
      c * 1e3, 100 * worst, m / 2, m / 2, c * 1e3, c * 1e3);
  const int closed = std::fclose(f);
  const std::unique_ptr<char, decltype(&std::free)> owned(text, &std::free);
  const Status st =
      closed != 0 ? Status::error(path + ": formatting: " + std::strerror(errno))
                  : write_durably(path, std::span(reinterpret_cast<const uint8_t*>(text), size));
  if (!st) {
    std::fprintf(stderr, "psrt-bench-transport: %s\n", st.message().c_str());
    return 1;
  }
  std::printf("wrote %s\n", path.c_str());
  return 0;
}

}  // namespace

int calibrate(const std::string& path, bool smoke) {
  std::vector<Point> points;
  for (uint64_t b : {1ull << 10, 4ull << 10, 16ull << 10, 64ull << 10, 256ull << 10, 1ull << 20}) {
    const auto count =
        static_cast<uint32_t>(std::max<uint64_t>(8, std::min<uint64_t>(200, (8ull << 20) / b)));
    points.push_back({b, smoke ? std::min<uint32_t>(count, 20) : count, smoke ? 2 : 15});
  }
  try {
    measure(points);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "psrt-bench-transport: calibration: %s\n", e.what());
    return 1;
  }
  // Least squares t = m + c * b, weighted by 1 / t^2 (relative errors): the small messages,
  // where the per-message cost shows, count as much as the large ones.
  double sw = 0, sb = 0, st = 0, sbb = 0, sbt = 0;
  for (const auto& p : points) {
    const double w = 1.0 / (p.us * p.us), b = double(p.bytes);
    sw += w;
    sb += w * b;
    st += w * p.us;
    sbb += w * b * b;
    sbt += w * b * p.us;
  }
  const double c = (sw * sbt - sb * st) / (sw * sbb - sb * sb);  // us per byte
  const double m = (st - c * sb) / sw;
  double worst = 0;  // largest relative error of the fit
  for (const auto& p : points) {
    worst = std::max(worst, std::abs(m + c * double(p.bytes) - p.us) / p.us);
  }
  std::printf("calibration: push-and-reply pairs streamed on loopback, 1 worker, 1 server\n");
  std::printf("%10s %8s %12s %12s\n", "bytes", "stream", "us per pair", "fit us");
  std::string sizes;
  for (const auto& p : points) {
    std::printf("%10llu %8u %12.2f %12.2f\n", (unsigned long long)p.bytes, p.count, p.us,
                m + c * double(p.bytes));
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s%llu:%.2f", sizes.empty() ? "" : ", ",
                  (unsigned long long)p.bytes, p.us);
    sizes += buf;
  }
  std::printf("fit: t = %.2f us + %.4f ns/byte * b (largest error %.1f%%)\n", m, c * 1e3,
              100 * worst);
  if (m < 0 || c < 0) {
    std::fprintf(stderr, "psrt-bench-transport: calibration: negative fit (noise?); not written\n");
    return 1;
  }
  return write_calibration(path, smoke, {m, c, worst}, sizes);
}

}  // namespace psrt::bench
