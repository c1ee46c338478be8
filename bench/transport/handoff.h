// What one thread hand-off costs on this machine: a psrt round trip hands the push from the
// compute thread to the I/O thread and the reply back (two wake-ups a raw socket echo does not
// pay). Measured as a condition-variable ping-pong between two threads, median microseconds per
// round (two hand-offs).
#pragma once

namespace psrt::bench {

double handoff_round_trip_us(int rounds);

}  // namespace psrt::bench
