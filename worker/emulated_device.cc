#include "worker/emulated_device.h"

#include <algorithm>
#include <thread>

namespace psrt {

EmulatedDevice::EmulatedDevice()
    : EmulatedDevice(Host{[] { return Clock::now(); },
                          [](Clock::time_point t) { std::this_thread::sleep_until(t); }}) {}

EmulatedDevice::EmulatedDevice(Host host) : host_(std::move(host)) {}

void EmulatedDevice::spend(double ms) {
  if (!(ms > 0)) return;
  const Clock::time_point now = host_.now();
  const Clock::time_point start = std::max(end_, now - late_);
  end_ = start + std::chrono::duration_cast<Clock::duration>(
                     std::chrono::duration<double, std::milli>(ms));
  host_.sleep_until(end_);
  late_ = std::max(Clock::duration::zero(), host_.now() - end_);
}

}  // namespace psrt
