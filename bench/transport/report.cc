#include "bench/transport/report.h"

#include <algorithm>
#include <cstdio>

namespace psrt::bench {

namespace {
void met(bool ok, const std::string& line) {
  std::printf("%s %s\n", ok ? "MET   " : "MISSED", line.c_str());
}
}  // namespace

std::string human(uint64_t b) {
  if (b >= (1 << 20)) return std::to_string(b >> 20) + " MB";
  return std::to_string(b >> 10) + " KB";
}

void print_table(const std::vector<Row>& rows, const std::string& mode, uint64_t chunk,
                 double handoff_us) {
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
  std::printf("one thread hand-off and back (condition variable, two wake-ups) on this machine: "
              "%.1f us\n", handoff_us);
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

void print_many_small(const ManySmall& many) {
  std::printf(
      "\n100 tensors of 4 KB in one iteration: %.1f us (%.1f messages), one 400 KB tensor: "
      "%.1f us; ratio %.2fx (the defaults: adaptive batching, scheduler.batch_bytes 64 KiB)\n",
      many.many_us, many.many_messages, many.one_us, many.many_us / many.one_us);
  std::printf("the same without batching (batch_bytes 0, a message per tensor as before): %.1f us "
              "(%.1f messages); ratio %.2fx\n",
              many.unbatched_us, many.unbatched_messages, many.unbatched_us / many.one_us);
  std::printf("the same with scheduler.grouping size:64KiB (GradOptimizer's groups): %.1f us "
              "(%.1f messages); ratio %.2fx\n",
              many.grouped_us, many.grouped_messages, many.grouped_us / many.one_us);
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

}  // namespace psrt::bench
