// The open-file limit a process needs for its job. ZeroMQ, out of descriptors, drops connections
// without a word: a coordinator under `ulimit -n 14` refused its workers silently and then blamed
// a healthy one ("never came: worker 0"), and psrt-launch ended in std::terminate ("pipe: Too many
// open files"). The soft limit is raised towards the hard one where it is lower than the need;
// a hard limit that is lower still is refused at start, naming both.
#pragma once

#include <cstdint>
#include <string>

namespace psrt {

// Descriptors one daemon of a job of `servers` and `workers` may hold: a server, a connection per
// peer on its one socket; a worker, a socket (its mailbox and its connection) per server and a few
// stage links; both, a margin for ZeroMQ's own, files, logs, and the metrics scrapers.
uint64_t daemon_open_files(bool server, int servers, int workers, bool metrics);

// Raises this process's soft RLIMIT_NOFILE to `need` where the hard limit allows; returns why it
// cannot (empty when it can).
std::string ensure_open_files(uint64_t need);

}  // namespace psrt
