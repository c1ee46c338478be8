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

#include "bench/transport/tcp_baseline.h"
#include "core/config.h"
#include "core/model.h"
#include "core/process.h"
#include "core/status.h"
#include "worker/ps_client.h"

namespace {

using Clock = std::chrono::steady_clock;
using psrt::Process;

struct Row {
  uint64_t bytes;
  int reps;
  double psrt_us = 0;
  double tcp_us = 0;
  double zmq_us = 0;
  double curve_us = 0;  // psrt with security.curve (--curve)
};

std::string self_dir() {
  return std::filesystem::canonical("/proc/self/exe").parent_path().string();
}

// What a child printed after "PSRT_LISTENING ".
std::string wait_listening(Process& child) {
  const std::string prefix = "PSRT_LISTENING ";
  const auto line =
      child.wait_line([&](const std::string& l) { return l.rfind(prefix, 0) == 0; }, 60);
  if (!line) throw std::runtime_error(child.name() + " did not start");
  return line->substr(prefix.size());
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Waits for a child to exit, draining both of its pipes meanwhile.
void reap(Process& child) {
  if (!child.wait_exit(60)) throw std::runtime_error(child.name() + " did not exit");
}

// One tensor (and layer) per row, of the row's size.
psrt::ModelDesc transport_model(const std::vector<Row>& rows) {
  psrt::ModelDesc model;
  model.name = "transport";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    psrt::LayerDesc layer;
    layer.name = "t" + std::to_string(i);
    model.add_layer(layer, {{layer.name, rows[i].bytes / sizeof(float)}});
  }
  return model;
}

// Writes the one-server one-worker job into `dir`; returns the config's path.
std::string write_job(const std::string& dir, const std::string& mode, uint64_t chunk_bytes,
                      bool curve) {
  const std::string cfg = dir + "/job.yaml";
  std::FILE* f = std::fopen(cfg.c_str(), "w");
  if (!f) throw std::runtime_error("cannot write " + cfg);
  std::fprintf(f,
               "job: {id: bench-transport, iterations: 1}\n"
               "cluster: {servers: 1, workers: 1, coordinator: 'tcp://127.0.0.1:0'}\n"
               "model: {backend: replay, profile: unused.yaml}\n"
               "optimizer: {type: sgd, lr: 0.000001, momentum: 0}\n"
               "scheduler: {mode: %s, chunk_bytes: %llu, credit_bytes: %llu}\n"
               "log_level: warn\n",
               mode.c_str(), (unsigned long long)chunk_bytes, (unsigned long long)(4 * chunk_bytes));
  if (curve) {
    std::fprintf(f, "security: {curve: true, secret_file: job.secret}\n");
    std::FILE* k = std::fopen((dir + "/job.secret").c_str(), "w");
    if (!k) throw std::runtime_error("cannot write " + dir + "/job.secret");
    std::fprintf(k, "psrt-bench-transport secret, not for real jobs");
    std::fclose(k);
  }
  std::fclose(f);
  return cfg;
}

// psrt's round trips into `field`; with `curve`, every connection is CURVE-encrypted.
void measure_psrt(std::vector<Row>& rows, const std::string& mode, uint64_t chunk_bytes,
                  bool curve, double Row::*field) {
  const psrt::ModelDesc model = transport_model(rows);
  const std::string dir = std::filesystem::temp_directory_path() /
                          ("psrt-bench-transport-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string cfg = write_job(dir, mode, chunk_bytes, curve);
  Process server("server 0", {self_dir() + "/psrt-server", "--config", cfg});
  const std::string endpoint = wait_listening(server);
  psrt::Config config = psrt::load_config(cfg, {"cluster.coordinator=" + endpoint});
  std::vector<std::vector<float>> params(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) params[i].assign(rows[i].bytes / 4, 0.5f);
  psrt::PsClient client(config, 0, model, [&](uint32_t key) {
    return std::span<float>(params[key]);
  });
  client.start();
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
  client.wait_all(0);
  client.finish();
  reap(server);
  std::filesystem::remove_all(dir);
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
  std::string mode = "fifo";
  uint64_t chunk = 1 << 20;
  app.add_flag("--smoke", smoke, "tiny run for the test suite");
  app.add_flag("--tcp-echo", echo, "internal: run the TCP echo server");
  app.add_flag("--zmq-echo", zmq_echo, "internal: run the ZeroMQ echo server");
  app.add_flag("--curve", curve, "also measure psrt with security.curve (CURVE encryption)");
  app.add_option("--mode", mode, "psrt scheduler mode")->capture_default_str();
  app.add_option("--chunk-bytes", chunk, "psrt chunk size (chunked modes)")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (echo) return psrt::bench::run_tcp_echo_server();
  if (zmq_echo) return psrt::bench::run_zmq_echo_server();
  spdlog::set_level(spdlog::level::warn);

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
