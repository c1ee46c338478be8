// psrt-bench-transport: push-to-reply round trip between one worker and one server over loopback,
// beside a plain-TCP echo measured by the same program with the same sizes and process layout.
//
// psrt: this process is worker 0 (PsClient: scheduler, credit, I/O thread); a psrt-server child
// process aggregates (one worker) and runs plain SGD, then replies with the new values.
// TCP: a child process of this binary echoes each request back after reading all of it.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "bench/transport/calibrate.h"
#include "bench/transport/psrt_rig.h"
#include "bench/transport/tcp_baseline.h"
#include "core/config.h"
#include "core/model.h"
#include "core/status.h"
#include "core/process.h"
#include "worker/ps_client.h"

namespace {

using Clock = std::chrono::steady_clock;
using psrt::bench::median;
using psrt::bench::reap;
using psrt::bench::wait_listening;
using psrt::Process;

struct Row {
  uint64_t bytes;
  int reps;
  double psrt_us = 0;
  double tcp_us = 0;
  double zmq_us = 0;
  double curve_us = 0;  // psrt with security.curve (--curve)
};

// psrt's round trips into `field`; with `curve`, every connection is CURVE-encrypted.
void measure_psrt(std::vector<Row>& rows, const std::string& mode, uint64_t chunk_bytes,
                  bool curve, double Row::*field) {
  psrt::ModelDesc model;
  model.name = "transport";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    psrt::LayerDesc layer;
    layer.name = "t" + std::to_string(i);
    model.add_layer(layer, {{layer.name, rows[i].bytes / sizeof(float)}});
  }
  psrt::bench::RigOptions options;
  options.mode = mode;
  options.chunk_bytes = chunk_bytes;
  options.credit_bytes = 4 * chunk_bytes;
  options.curve = curve;
  psrt::bench::with_psrt(model, options, [&](psrt::PsClient& client) {
    for (std::size_t i = 0; i < rows.size(); ++i) {
      // The zero-copy push: this measures the transport, not a copy of the gradient.
      auto grad = std::make_shared<const std::vector<float>>(rows[i].bytes / 4, 1e-3f);
      std::vector<double> us;
      const int warmup = std::max(1, rows[i].reps / 10);
      for (int r = 0; r < warmup + rows[i].reps; ++r) {
        const uint64_t t = uint64_t(r);
        const auto t0 = Clock::now();
        client.push(uint32_t(i), t, grad);
        client.wait_layer(uint32_t(i), t + 1);
        const double d = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
        if (r >= warmup) us.push_back(d);
      }
      rows[i].*field = median(us);
    }
  });
}

// Times `client.round_trip` for every row into `field`.
template <typename Client>
void measure_echo(std::vector<Row>& rows, Client& client, double Row::*field) {
  for (auto& row : rows) {
    std::vector<char> buf(row.bytes, 1);
    std::vector<double> us;
    const int warmup = std::max(1, row.reps / 10);
    for (int r = 0; r < warmup + row.reps; ++r) {
      const auto t0 = Clock::now();
      client.round_trip(buf);
      const double d = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
      if (r >= warmup) us.push_back(d);
    }
    row.*field = median(us);
  }
}

void measure_baselines(std::vector<Row>& rows) {
  const std::string self = std::filesystem::canonical("/proc/self/exe").string();
  {
    Process echo("zmq echo", {self, "--zmq-echo"});
    {
      psrt::bench::ZmqClient client(wait_listening(echo));
      measure_echo(rows, client, &Row::zmq_us);
    }
    reap(echo);
  }
  Process echo("tcp echo", {self, "--tcp-echo"});
  const int port = std::stoi(wait_listening(echo));
  {
    psrt::bench::TcpClient client(port);
    measure_echo(rows, client, &Row::tcp_us);
  }
  reap(echo);
}

std::string human(uint64_t b) {
  if (b >= (1 << 20)) return std::to_string(b >> 20) + " MB";
  return std::to_string(b >> 10) + " KB";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"psrt-bench-transport: psrt push-to-reply round trip beside plain TCP"};
  bool smoke = false, echo = false, zmq_echo = false, curve = false;
  std::string calibration;
  std::string mode = "fifo";
  uint64_t chunk = 1 << 20;
  app.add_flag("--smoke", smoke, "tiny run for the test suite");
  app.add_flag("--tcp-echo", echo, "internal: run the TCP echo server");
  app.add_flag("--zmq-echo", zmq_echo, "internal: run the ZeroMQ echo server");
  app.add_flag("--curve", curve, "also measure psrt with security.curve (CURVE encryption)");
  app.add_option("--mode", mode, "psrt scheduler mode")->capture_default_str();
  app.add_option("--chunk-bytes", chunk, "psrt chunk size (chunked modes)")->capture_default_str();
  app.add_option("--calibrate", calibration,
                 "write psrt-sim's calibration YAML here (streams of several message sizes, "
                 "least-squares fit) instead of the round-trip table");
  CLI11_PARSE(app, argc, argv);
  if (echo) return psrt::bench::run_tcp_echo_server();
  if (zmq_echo) return psrt::bench::run_zmq_echo_server();
  spdlog::set_level(spdlog::level::warn);
  if (!calibration.empty()) return psrt::bench::calibrate(calibration, smoke);

  std::vector<Row> rows;
  if (smoke) {
    rows = {{4 << 10, 20}, {64 << 10, 10}, {1 << 20, 4}};
  } else {
    rows = {{4 << 10, 2000}, {64 << 10, 500}, {1 << 20, 100}, {16 << 20, 20}, {64 << 20, 8}};
  }
  try {
    measure_baselines(rows);
    measure_psrt(rows, mode, chunk, false, &Row::psrt_us);
    if (curve) measure_psrt(rows, mode, chunk, true, &Row::curve_us);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "psrt-bench-transport: %s\n", e.what());
    return 1;
  }
  std::printf("psrt-bench-transport: 1 worker, 1 server, loopback; psrt mode %s, chunk %s;\n"
              "round trip = push N bytes, server applies SGD, reply N bytes (median)\n",
              mode.c_str(), human(chunk).c_str());
  std::printf("goodput = 2 x size / round trip; ratios are psrt over plain TCP\n");
  std::printf("%-6s %9s %9s %9s %10s %10s %10s %10s %10s\n", "size", "tcp us", "zmq us",
              "psrt us", "rtt ratio", "tcp MB/s", "zmq MB/s", "psrt MB/s", "gput ratio");
  for (const auto& r : rows) {
    const double gp = 2.0 * double(r.bytes) / r.psrt_us;  // bytes per us = MB/s
    const double gt = 2.0 * double(r.bytes) / r.tcp_us;
    const double gz = 2.0 * double(r.bytes) / r.zmq_us;
    std::printf("%-6s %9.1f %9.1f %9.1f %9.2fx %10.0f %10.0f %10.0f %9.2fx\n",
                human(r.bytes).c_str(), r.tcp_us, r.zmq_us, r.psrt_us, r.psrt_us / r.tcp_us, gt,
                gz, gp, gp / gt);
  }
  if (curve) {
    std::printf("\nsecurity.curve: the same round trips with every connection CURVE-encrypted\n");
    std::printf("%-6s %9s %9s %11s %10s %10s\n", "size", "psrt us", "curve us", "curve/psrt",
                "psrt MB/s", "curve MB/s");
    for (const auto& r : rows) {
      std::printf("%-6s %9.1f %9.1f %10.2fx %10.0f %10.0f\n", human(r.bytes).c_str(), r.psrt_us,
                  r.curve_us, r.curve_us / r.psrt_us, 2.0 * double(r.bytes) / r.psrt_us,
                  2.0 * double(r.bytes) / r.curve_us);
    }
  }
  return 0;
}
