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
#include "bench/transport/handoff.h"
#include "bench/transport/psrt_rig.h"
#include "bench/transport/report.h"
#include "bench/transport/tcp_baseline.h"
#include "core/cli.h"
#include "core/config.h"
#include "core/model.h"
#include "core/process.h"
#include "core/status.h"
#include "worker/ps_client.h"

namespace {

using Clock = std::chrono::steady_clock;
using psrt::bench::human;
using psrt::bench::ManySmall;
using psrt::bench::median;
using psrt::bench::reap;
using psrt::bench::Row;
using psrt::bench::wait_listening;
using psrt::Process;

// psrt's round trips into `field`; with `curve`, every connection is CURVE-encrypted.
// `socket_buffer`: limits.socket_buffer_bytes (-1: the default).
void measure_psrt(std::vector<Row>& rows, const std::string& mode, uint64_t chunk_bytes,
                  bool curve, double Row::*field, uint64_t credit_chunks = 4,
                  int64_t socket_buffer = -1) {
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
  options.socket_buffer_bytes = socket_buffer;
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
                         double* messages, const std::string& grouping = "none",
                         int64_t batch_bytes = -1) {
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
  options.batch_bytes = batch_bytes;
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
  m.unbatched_us = measure_iteration(100, 1024, mode, reps, &m.unbatched_messages, "none", 0);
  m.grouped_us =
      measure_iteration(100, 1024, mode, reps, &m.grouped_messages, "size:64KiB");
  return m;
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

// psrt's round trips with each SO_SNDBUF / SO_RCVBUF size (limits.socket_buffer_bytes), `rounds`
// times in turn; the median of the rounds' medians, beside plain TCP (4 MB buffers).
void sweep_socket_buffers(std::vector<Row> rows, const std::string& mode, uint64_t chunk,
                          const std::vector<int64_t>& sizes, int rounds) {
  measure_baselines(rows);
  std::vector<std::vector<std::vector<double>>> us(
      sizes.size(), std::vector<std::vector<double>>(rows.size()));
  for (int r = 0; r < rounds; ++r) {
    for (std::size_t s = 0; s < sizes.size(); ++s) {
      measure_psrt(rows, mode, chunk, false, &Row::psrt_us, 4, sizes[s]);
      for (std::size_t i = 0; i < rows.size(); ++i) us[s][i].push_back(rows[i].psrt_us);
    }
  }
  std::printf("psrt round trip (us, median of %d rounds) by limits.socket_buffer_bytes; "
              "mode %s, chunk %s; ratio to plain TCP in brackets\n%-6s %9s",
              rounds, mode.c_str(), human(chunk).c_str(), "size", "tcp us");
  for (int64_t b : sizes) {
    std::printf(" %16s", b == 0 ? "OS default" : human(uint64_t(b)).c_str());
  }
  std::printf("\n");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    std::printf("%-6s %9.1f", human(rows[i].bytes).c_str(), rows[i].tcp_us);
    for (std::size_t s = 0; s < sizes.size(); ++s) {
      const double m = median(us[s][i]);
      std::printf(" %9.1f (%.2fx)", m, m / rows[i].tcp_us);
    }
    std::printf("\n");
  }
}

}  // namespace

namespace {
// One line; exit 2 for a setting the job refuses (--chunk-bytes 1), 1 for a failed measurement.
int failed(const std::exception& e) {
  std::fprintf(stderr, "psrt-bench-transport: %s\n", e.what());
  return dynamic_cast<const psrt::ConfigError*>(&e) != nullptr ? 2 : 1;
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"psrt-bench-transport: psrt push-to-reply round trip beside plain TCP"};
  bool smoke = false, echo = false, zmq_echo = false, curve = false;
  std::string calibration;
  std::string mode = "fifo";
  std::string only;
  std::vector<int64_t> buffer_sizes;
  int many_reps = 300;
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
  app.add_option("--only", only,
                 "run one case alone (for profiling, e.g. under callgrind): many-small (100 x 4 KB "
                 "beside 400 KB, no baselines, no targets)")
      ->check(CLI::IsMember({"many-small"}));
  app.add_option("--socket-buffers", buffer_sizes,
                 "instead of the table: psrt's round trips with each of these "
                 "limits.socket_buffer_bytes (0: the OS's default), 3 rounds in turn")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 30))
      ->delimiter(',');
  app.add_option("--many-reps", many_reps, "iterations of the 100 x 4 KB case")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  if (const auto rc = psrt::parse_command_line(app, argc, argv, "psrt-bench-transport")) {
    return *rc;
  }
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
  if (!buffer_sizes.empty()) {
    try {
      sweep_socket_buffers(rows, mode, chunk, buffer_sizes, smoke ? 1 : 3);
    } catch (const std::exception& e) {
      return failed(e);
    }
    return 0;
  }
  if (only == "many-small") {
    try {
      many = measure_many_small(mode, many_reps);
    } catch (const std::exception& e) {
      return failed(e);
    }
    print_many_small(many);
    return 0;
  }
  try {
    measure_baselines(rows);
    measure_psrt(rows, mode, chunk, false, &Row::psrt_us);
    if (curve) measure_psrt(rows, mode, chunk, true, &Row::curve_us);
    if (!smoke) measure_two_in_flight(rows);
    many = measure_many_small(mode, smoke ? 10 : many_reps);
  } catch (const std::exception& e) {
    return failed(e);
  }
  print_table(rows, mode, chunk, psrt::bench::handoff_round_trip_us(smoke ? 100 : 20000));
  if (curve) print_curve(rows);
  if (!smoke) print_two_in_flight(rows);
  print_many_small(many);
  if (!smoke) print_targets(rows, many);
  return 0;
}
