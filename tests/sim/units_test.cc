#include <catch2/catch.hpp>

#include "scheduler/sim/units.h"

using psrt::sim::format_bandwidth;
using psrt::sim::format_size;
using psrt::sim::parse_bandwidth;
using psrt::sim::parse_size;

TEST_CASE("sizes", "[sim][units]") {
  CHECK(parse_size("1000000") == 1000000u);
  CHECK(parse_size("4MiB") == 4u << 20);
  CHECK(parse_size("512KiB") == 512u << 10);
  CHECK(parse_size("512kib") == 512u << 10);
  CHECK(parse_size("1GiB") == 1u << 30);
  CHECK(parse_size("4MB") == 4000000u);
  CHECK(parse_size("1.5KiB") == 1536u);
  CHECK(parse_size("64B") == 64u);
  for (const char* bad : {"", "MiB", "4XB", "0", "-4MiB", "0.5", "4 MiB", "1e30"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_size(bad).has_value());
  }
  CHECK(format_size(4u << 20) == "4 MiB");
  CHECK(format_size(512u << 10) == "512 KiB");
  CHECK(format_size(1000) == "1000 B");
}

TEST_CASE("bandwidths", "[sim][units]") {
  CHECK(parse_bandwidth("1Gbit") == 125e6);
  CHECK(parse_bandwidth("1gbit") == 125e6);
  CHECK(parse_bandwidth("100Mbit") == 12.5e6);
  CHECK(parse_bandwidth("10Gbit/s") == 1.25e9);
  CHECK(parse_bandwidth("1Gbps") == 125e6);
  CHECK(parse_bandwidth("125MB/s") == 125e6);
  CHECK(parse_bandwidth("1.25GB/s") == 1.25e9);
  CHECK(parse_bandwidth("100MiB/s") == 100.0 * (1 << 20));
  for (const char* bad :
       {"", "1G", "125mb/s", "1Gb", "0Gbit", "-1Gbit", "fast", "1xbit", "1iB/s"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_bandwidth(bad).has_value());
  }
  CHECK(format_bandwidth(125e6) == "1 Gbit/s");
  CHECK(format_bandwidth(12.5e6) == "100 Mbit/s");
}
