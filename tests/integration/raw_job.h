// The steps a raw client (raw_client.h) takes to bring a one-worker job through its life by hand:
// registration, initial values, the start barrier, the shutdown barrier.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "tests/integration/raw_client.h"

namespace psrt::test {

// One server, one worker (job id "rawjob"), plain SGD with lr 0.5, fifo.
std::string raw_job_yaml();
// Multiples of 1/64 in [-1, 1]: p - 0.5 * g is exact in fp32.
std::vector<float> dyadic(std::size_t n, std::mt19937& rng);
// REGISTER for tensors of `sizes` elements (keys 0.. unless `keys`), one layer each.
wire::Header register_header(RawClient& w, const std::vector<uint64_t>& sizes,
                             const std::vector<uint32_t>& keys = {});
// Registers, initialises every chunk with seeded values, passes the start barrier, pulls
// iteration 0 (fifo, one server: one chunk per tensor). Returns the parameters by key.
std::vector<std::vector<float>> start_job(RawClient& w, std::mt19937& rng,
                                          const std::vector<uint64_t>& sizes);
// Passes the shutdown barrier and checks that the server exits 0.
void shutdown_and_exit(RawClient& w, ServerProc& s);
// The server has not exited (reads its output meanwhile, for the failure message).
void still_running(ServerProc& s);

}  // namespace psrt::test
