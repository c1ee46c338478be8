// psrt-bench-transport --calibrate FILE: the simulator's calibration (scheduler/sim/calibration.h)
// from streams of messages of several sizes between one worker and one server on loopback.
//
// For each size b, K tensors of b bytes are pushed at once (credit 4 MiB, fifo) and the time until
// every reply is back is divided by K: the cost of one push-and-reply pair when the I/O threads
// are never idle, t(b). A least-squares line t(b) = m + c * b over the sizes gives the per-message
// and per-byte costs. Worker and server I/O threads run in parallel and each handles one push and
// one reply per pair, so the stream's rate is the slower one's; the file charges m / 2 per message
// (push or reply) and c per received byte to both, which makes each side's cost per pair the
// measured m + c * b. The link itself is not in these figures: psrt-sim gets it from --bandwidth.
#pragma once

#include <string>

namespace psrt::bench {

// Measures, fits and writes `path`; prints the points and the fit. Returns 0, or 1 on failure.
int calibrate(const std::string& path, bool smoke);

}  // namespace psrt::bench
