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
  double two_us = 0;    // psrt chunked, two 4 MB chunks in flight (16 MB and up)
  double messages = 0;  // psrt messages per round trip, counted at the worker (both directions)
};

// 100 tensors of 4 KB pushed in one iteration, beside one tensor of their 400 KB together.
struct ManySmall {
  double many_us = 0, one_us = 0, many_messages = 0;
  double grouped_us = 0, grouped_messages = 0;  // with scheduler.grouping size:64KiB
};

// psrt's round trips into `field`; with `curve`, every connection is CURVE-encrypted.
void measure_psrt(std::vector<Row>& rows, const std::string& mode, uint64_t chunk_bytes,
                  bool curve, double Row::*field, uint64_t credit_chunks = 4) {
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
  options.credit_bytes = credit_chunks * chunk_bytes;
  options.curve = curve;
  psrt::bench::with_psrt(model, options, [&](psrt::PsClient& client) {
    for (std::size_t i = 0; i < rows.size(); ++i) {
      // The zero-copy push: this measures the transport, not a copy of the gradient.
      auto grad = std::make_shared<const std::vector<float>>(rows[i].bytes / 4, 1e-3f);
      std::vector<double> us;
      const int warmup = std::max(1, rows[i].reps / 10);
      const psrt::ClientStats before = client.stats();
      for (int r = 0; r < warmup + rows[i].reps; ++r) {
        const uint64_t t = uint64_t(r);
        const auto t0 = Clock::now();
        client.push(uint32_t(i), t, grad);
        client.wait_layer(uint32_t(i), t + 1);
        const double d = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
        if (r >= warmup) us.push_back(d);
      }
      rows[i].*field = median(us);
      const psrt::ClientStats after = client.stats();
      rows[i].messages = double(after.messages_sent + after.messages_received -
                                before.messages_sent - before.messages_received) /
                         double(warmup + rows[i].reps);
    }
  });
}

// One iteration's round trip of `tensors` tensors of `floats` each: all pushed (backward order),
// then all waited for. Median microseconds; `messages` gets the messages per iteration.
double measure_iteration(uint32_t tensors, uint64_t floats, const std::string& mode, int reps,
                         double* messages, const std::string& grouping = "none") {
  psrt::ModelDesc model;
  model.name = "iteration";
  for (uint32_t i = 0; i < tensors; ++i) {
    psrt::LayerDesc layer;
    layer.name = "t" + std::to_string(i);
    model.add_layer(layer, {{layer.name, floats}});
  }
  psrt::bench::RigOptions options;
  options.mode = mode;
  options.grouping = grouping;
  double result = 0;
  psrt::bench::with_psrt(model, options, [&](psrt::PsClient& client) {
    auto grad = std::make_shared<const std::vector<float>>(floats, 1e-3f);
    std::vector<double> us;
    const int warmup = std::max(1, reps / 10);
    const psrt::ClientStats before = client.stats();
    for (int r = 0; r < warmup + reps; ++r) {
      const uint64_t t = uint64_t(r);
      const auto t0 = Clock::now();
      for (uint32_t k = tensors; k-- > 0;) client.push(k, t, grad);
      client.wait_all(t + 1);
      const double d = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
      if (r >= warmup) us.push_back(d);
    }
    const psrt::ClientStats after = client.stats();
    *messages = double(after.messages_sent + after.messages_received - before.messages_sent -
                       before.messages_received) /
                double(warmup + reps);
    result = median(us);
  });
  return result;
}

ManySmall measure_many_small(const std::string& mode, int reps) {
  ManySmall m;
  double one_messages = 0;
  m.many_us = measure_iteration(100, 1024, mode, reps, &m.many_messages);
  m.one_us = measure_iteration(1, 100 * 1024, mode, reps, &one_messages);
  m.grouped_us =
      measure_iteration(100, 1024, mode, reps, &m.grouped_messages, "size:64KiB");
  return m;
}

void met(bool ok, const std::string& line) {
  std::printf("%s %s\n", ok ? "MET   " : "MISSED", line.c_str());
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


// The chunked path with two 4 MB chunks in flight, for the rows of 16 MB and up.
void measure_two_in_flight(std::vector<Row>& rows) {
  std::vector<Row> large;
  for (const auto& r : rows) {
    if (r.bytes >= (16u << 20)) large.push_back(r);
  }
  if (large.empty()) return;
  measure_psrt(large, "fifo_chunked", 4 << 20, false, &Row::two_us, 2);
  for (auto& r : rows) {
    for (const auto& l : large) {
      if (l.bytes == r.bytes) r.two_us = l.two_us;
    }
  }
}

void print_table(const std::vector<Row>& rows, const std::string& mode, uint64_t chunk) {
  std::printf("psrt-bench-transport: 1 worker, 1 server, loopback; psrt mode %s, chunk %s;\n"
              "round trip = push N bytes, server applies SGD, reply N bytes (median)\n",
              mode.c_str(), human(chunk).c_str());
  std::printf("goodput = 2 x size / round trip; ratios are psrt over plain TCP; msgs: psrt\n"
              "messages per round trip at the worker, both directions\n");
  std::printf("%-6s %9s %9s %9s %10s %10s %10s %10s %10s %6s\n", "size", "tcp us", "zmq us",
              "psrt us", "rtt ratio", "tcp MB/s", "zmq MB/s", "psrt MB/s", "gput ratio", "msgs");
  for (const auto& r : rows) {
    const double gp = 2.0 * double(r.bytes) / r.psrt_us;  // bytes per us = MB/s
    const double gt = 2.0 * double(r.bytes) / r.tcp_us;
    const double gz = 2.0 * double(r.bytes) / r.zmq_us;
    std::printf("%-6s %9.1f %9.1f %9.1f %9.2fx %10.0f %10.0f %10.0f %9.2fx %6.2f\n",
                human(r.bytes).c_str(), r.tcp_us, r.zmq_us, r.psrt_us, r.psrt_us / r.tcp_us, gt,
                gz, gp, gp / gt, r.messages);
  }
}

void print_curve(const std::vector<Row>& rows) {
  std::printf("\nsecurity.curve: the same round trips with every connection CURVE-encrypted\n");
  std::printf("%-6s %9s %9s %11s %10s %10s\n", "size", "psrt us", "curve us", "curve/psrt",
              "psrt MB/s", "curve MB/s");
  for (const auto& r : rows) {
    std::printf("%-6s %9.1f %9.1f %10.2fx %10.0f %10.0f\n", human(r.bytes).c_str(), r.psrt_us,
                r.curve_us, r.curve_us / r.psrt_us, 2.0 * double(r.bytes) / r.psrt_us,
                2.0 * double(r.bytes) / r.curve_us);
  }
}

void print_two_in_flight(const std::vector<Row>& rows) {
  std::printf("\nchunked (fifo_chunked), 4 MB chunks, credit 8 MB: two chunks in flight\n");
  std::printf("%-6s %9s %9s %10s\n", "size", "tcp us", "psrt us", "rtt ratio");
  for (const auto& r : rows) {
    if (r.two_us <= 0) continue;
    std::printf("%-6s %9.1f %9.1f %9.2fx\n", human(r.bytes).c_str(), r.tcp_us, r.two_us,
                r.two_us / r.tcp_us);
  }
}

// Issue 19's targets, against this run's plain-TCP column; the chunked rows count at their best.
void print_targets(const std::vector<Row>& rows, const ManySmall& many) {
  std::printf("\ntargets\n");
  char buf[200];
  for (const auto& r : rows) {
    const double best = r.two_us > 0 ? std::min(r.psrt_us, r.two_us) : r.psrt_us;
    const double ratio = best / r.tcp_us;
    double limit = 0;
    if (r.bytes <= (64u << 10)) limit = 1.6;
    if (r.bytes == (16u << 20)) limit = 1.0;
    if (r.bytes == (64u << 20)) limit = 0.75;
    if (limit == 0) continue;
    std::snprintf(buf, sizeof buf, "%s round trip at most %.2fx plain TCP: %.2fx (%.1f vs %.1f us)",
                  human(r.bytes).c_str(), limit, ratio, best, r.tcp_us);
    met(ratio <= limit, buf);
  }
  std::snprintf(buf, sizeof buf,
                "100 x 4 KB tensors in one iteration at most 2x one 400 KB tensor: %.2fx "
                "(%.1f vs %.1f us)",
                many.many_us / many.one_us, many.many_us, many.one_us);
  met(many.many_us <= 2 * many.one_us, buf);
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
  ManySmall many;
  try {
    measure_baselines(rows);
    measure_psrt(rows, mode, chunk, false, &Row::psrt_us);
    if (curve) measure_psrt(rows, mode, chunk, true, &Row::curve_us);
    if (!smoke) measure_two_in_flight(rows);
    many = measure_many_small(mode, smoke ? 10 : 300);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "psrt-bench-transport: %s\n", e.what());
    return 1;
  }
  print_table(rows, mode, chunk);
  if (curve) print_curve(rows);
  if (!smoke) print_two_in_flight(rows);
  std::printf("\n100 tensors of 4 KB in one iteration: %.1f us (%.1f messages), one 400 KB tensor: "
              "%.1f us; ratio %.2fx\n",
              many.many_us, many.many_messages, many.one_us, many.many_us / many.one_us);
  std::printf("the same with scheduler.grouping size:64KiB (GradOptimizer's groups): %.1f us "
              "(%.1f messages); ratio %.2fx\n",
              many.grouped_us, many.grouped_messages, many.grouped_us / many.one_us);
  if (!smoke) print_targets(rows, many);
  return 0;
}
