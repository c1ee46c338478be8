// psrt-bench-transport's figures and how they are printed: the round-trip table, the CURVE and
// two-chunks-in-flight tables, the 100 x 4 KB case and issue 19's targets as MET / MISSED lines.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace psrt::bench {

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
  double many_us = 0, one_us = 0, many_messages = 0;  // the defaults: adaptive batching on
  double unbatched_us = 0, unbatched_messages = 0;    // scheduler.batch_bytes 0
  double grouped_us = 0, grouped_messages = 0;  // with scheduler.grouping size:64KiB
};

// "4 KB", "16 MB".
std::string human(uint64_t b);

void print_table(const std::vector<Row>& rows, const std::string& mode, uint64_t chunk,
                 double handoff_us);
void print_curve(const std::vector<Row>& rows);
void print_two_in_flight(const std::vector<Row>& rows);
void print_many_small(const ManySmall& many);
// Issue 19's targets, against the run's plain-TCP column.
void print_targets(const std::vector<Row>& rows, const ManySmall& many);

}  // namespace psrt::bench
