// Room in the address space for OpenBLAS's buffers. OpenBLAS takes one buffer (128 MiB of address
// space in Debian's x86_64 build) for each thread that calls it, on its first call; when malloc
// refuses it, under an address-space limit (`ulimit -v`, a batch system's memory limit), OpenBLAS
// retries for ever, and a worker hung on its first layer with nothing said.
#pragma once

#include <string>

namespace psrt::engine {

// With a finite RLIMIT_AS: checks that `callers` buffers fit, then takes the calling thread's
// buffer at once (a tiny product), so that nothing allocated later can take its room. Returns
// what stands in the way, naming the limit ("" when nothing does, or no limit is set).
std::string take_blas_buffers(int callers);

}  // namespace psrt::engine
