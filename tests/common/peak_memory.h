// For tests that check what a step allocates: the growth of this process's peak resident memory
// (VmHWM) while a function runs, the peak reset first through /proc/self/clear_refs.
#pragma once

#include <fstream>
#include <string>

namespace psrt::test {

// A line "Key:   N kB" of /proc/self/status, in MiB; -1 when absent.
inline double status_mib(const std::string& key) {
  std::ifstream f("/proc/self/status");
  for (std::string line; std::getline(f, line);) {
    if (line.rfind(key + ":", 0) == 0) return std::stod(line.substr(key.size() + 1)) / 1024.0;
  }
  return -1;
}

// The peak's growth in MiB while `f` runs; -1 where the kernel does not let the peak be reset
// (callers then skip the check).
template <typename F>
double peak_growth_mib(F&& f) {
  std::ofstream reset("/proc/self/clear_refs");
  reset << "5";
  reset.flush();
  if (!reset.good()) return -1;
  const double before = status_mib("VmRSS");
  f();
  return status_mib("VmHWM") - before;
}

}  // namespace psrt::test
