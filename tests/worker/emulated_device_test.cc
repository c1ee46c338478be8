// The replay backends' emulated device on a test clock whose every wait wakes the host late.
#include <catch2/catch.hpp>

#include <chrono>

#include "worker/emulated_device.h"

using namespace psrt;
using namespace std::chrono_literals;
using Clock = EmulatedDevice::Clock;

namespace {

// A host whose waits end `late` after their deadline, and that can be made to do other work.
struct FakeHost {
  Clock::time_point t{};
  Clock::duration late{};
  EmulatedDevice device{EmulatedDevice::Host{
      [this] { return t; }, [this](Clock::time_point until) { t = std::max(t, until) + late; }}};
};

}  // namespace

TEST_CASE("layers run back to back on the device, whatever the host's late wake-ups") {
  FakeHost host;
  host.late = 300us;
  const Clock::time_point start = host.t;
  for (int i = 0; i < 100; ++i) host.device.spend(1.0);
  // The device ends after 100 ms of layers; the host learns it one wake-up later. Waiting from
  // each wake-up instead would take 100 x 1.3 ms.
  CHECK(host.device.end() - start == 100ms);
  CHECK(host.t - start == 100ms + 300us);
}

TEST_CASE("a host that was away starts the device late by as much") {
  FakeHost host;
  host.late = 100us;
  const Clock::time_point start = host.t;
  host.device.spend(2.0);  // ends at 2 ms; the host wakes at 2.1
  host.t += 5ms;           // waits 5 ms for parameters
  host.device.spend(1.0);  // starts at 7.1 - 0.1 (its last wake-up's delay is not the device's)
  CHECK(host.device.end() - start == 8ms);
  host.device.spend(0.0);   // nothing to do: no wait, no change
  host.device.spend(-1.0);
  CHECK(host.device.end() - start == 8ms);
  CHECK(host.t - start == 8ms + 100us);
}
