// The plain-TCP baseline of psrt-bench-transport: an echo server in a child process (the same
// binary, started with --tcp-echo) and a client that sends N bytes and reads N back.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace psrt::bench {

// Runs the echo server: listens on 127.0.0.1:0, prints "PSRT_LISTENING <port>", then for each
// request (8-byte length, then that many bytes) sends the same number of bytes back.
int run_tcp_echo_server();

class TcpClient {
 public:
  explicit TcpClient(int port);
  ~TcpClient();
  TcpClient(const TcpClient&) = delete;
  TcpClient& operator=(const TcpClient&) = delete;
  // One round trip of `buf.size()` bytes each way.
  void round_trip(std::vector<char>& buf);

 private:
  int fd_ = -1;
};

// The ZeroMQ floor: a ROUTER in a child process that echoes every message back; the client is a
// DEALER. What psrt adds on top of ZeroMQ is psrt's own cost.
int run_zmq_echo_server();

class ZmqClient {
 public:
  explicit ZmqClient(const std::string& endpoint);
  ~ZmqClient();
  ZmqClient(const ZmqClient&) = delete;
  ZmqClient& operator=(const ZmqClient&) = delete;
  void round_trip(std::vector<char>& buf);

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace psrt::bench
