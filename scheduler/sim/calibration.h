// What the runtime pays per message and per byte beside the link, fitted from measurements
// (psrt-bench-transport --calibrate; bench/calibration/README.md says how) and read by psrt-sim
// and psrt-bench-priority (--calibration FILE). All zero: the ideal runtime of the old simulator.
//
//   worker_message_us  the worker's I/O thread, per message it sends (a push) and per message
//                      it receives (a reply): header, ZeroMQ, bookkeeping. Serial per worker.
//   server_message_us  the server's I/O thread, per push received (checks, ack) and per reply
//                      sent. Serial per server, shared by all workers.
//   server_byte_ns     the server's I/O thread per payload byte received (copy, checks, small
//                      updates run inline).
//   worker_byte_ns     the worker's I/O thread per payload byte received (the values' copy).
#pragma once

#include <cstdint>
#include <string>

namespace psrt::sim {

struct Calibration {
  double worker_message_us = 0;
  double server_message_us = 0;
  double server_byte_ns = 0;
  double worker_byte_ns = 0;
  std::string source;  // the file it came from ("" when none)

  // What one message costs its I/O thread, in ms: the sender per message handed over, the
  // receiver per message and per payload byte taken in.
  double worker_send_ms() const { return worker_message_us / 1e3; }
  double worker_receive_ms(uint64_t bytes) const {
    return worker_message_us / 1e3 + worker_byte_ns * double(bytes) / 1e6;
  }
  double server_send_ms() const { return server_message_us / 1e3; }
  double server_receive_ms(uint64_t bytes) const {
    return server_message_us / 1e3 + server_byte_ns * double(bytes) / 1e6;
  }

  bool ideal() const {
    return worker_message_us == 0 && server_message_us == 0 && server_byte_ns == 0 &&
           worker_byte_ns == 0;
  }
};

// Reads the YAML written by psrt-bench-transport --calibrate. Throws std::invalid_argument naming
// the file and the key for a missing file, an unknown key or a negative or absurd value.
Calibration load_calibration(const std::string& path);

}  // namespace psrt::sim
