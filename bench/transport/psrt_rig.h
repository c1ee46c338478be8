// psrt-bench-transport's psrt side: a psrt-server child process and this process as worker 0
// (PsClient: scheduler, credit, I/O thread) for a given model, plus the child-process helpers the
// baselines share.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/process.h"
#include "worker/ps_client.h"

namespace psrt::bench {

std::string self_dir();
// What a child printed after "PSRT_LISTENING "; throws when it exits first.
std::string wait_listening(Process& child);
// Waits for a child to exit, draining both of its pipes meanwhile.
void reap(Process& child);
double median(std::vector<double> v);

struct RigOptions {
  std::string mode = "fifo";
  uint64_t chunk_bytes = 1 << 20;
  uint64_t credit_bytes = 4 << 20;
  bool curve = false;  // security.curve on every connection
  std::string grouping = "none";  // scheduler.grouping
  int64_t socket_buffer_bytes = -1;  // limits.socket_buffer_bytes; -1: the default
  int64_t batch_bytes = -1;          // scheduler.batch_bytes; -1: the default
};

// Starts the server, registers and starts the client for `model` (parameters 0.5, plain SGD),
// runs `body`, then shuts the job down and removes its files.
void with_psrt(const ModelDesc& model, const RigOptions& options,
               const std::function<void(PsClient&)>& body);

}  // namespace psrt::bench
