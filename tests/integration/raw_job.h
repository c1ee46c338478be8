// The steps raw clients (raw_client.h) take to bring a job through its life by hand:
// registration, initial values, the start barrier, the shutdown barrier.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "tests/integration/raw_client.h"

namespace psrt::test {

// One server, `workers` workers (job id "rawjob"), plain SGD with lr 0.5, fifo.
std::string raw_job_yaml(int workers = 1);
// Multiples of 1/64 in [-1, 1]: p - 0.5 * g is exact in fp32.
std::vector<float> dyadic(std::size_t n, std::mt19937& rng);
// REGISTER for tensors of `sizes` elements (keys 0.. unless `keys`), one layer each.
wire::Header register_header(RawClient& w, const std::vector<uint64_t>& sizes,
                             const std::vector<uint32_t>& keys = {});
// Every worker registers; worker 0 (the first) initialises every chunk with seeded values; all
// pass the start barrier and pull iteration 0 (fifo, one server: one chunk per tensor).
// Returns the parameters by key.
std::vector<std::vector<float>> start_job(const std::vector<RawClient*>& workers,
                                          std::mt19937& rng, const std::vector<uint64_t>& sizes);
inline std::vector<std::vector<float>> start_job(RawClient& w, std::mt19937& rng,
                                                 const std::vector<uint64_t>& sizes) {
  return start_job(std::vector<RawClient*>{&w}, rng, sizes);
}
// Every worker passes the shutdown barrier; checks that the server exits 0.
void shutdown_and_exit(const std::vector<RawClient*>& workers, ServerProc& s);
inline void shutdown_and_exit(RawClient& w, ServerProc& s) {
  shutdown_and_exit(std::vector<RawClient*>{&w}, s);
}
// The server has not exited (reads its output meanwhile, for the failure message).
void still_running(ServerProc& s);

}  // namespace psrt::test
