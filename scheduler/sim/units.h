// Sizes and bandwidths as people write them on a command line.
//   sizes:      1000000, 4MiB, 512KiB, 1GiB, 4MB (decimal), 64B; units are case-insensitive.
//   bandwidths: 1Gbit, 100Mbit, 10gbit/s, 1Gbps (bits per second, decimal prefixes, as tc);
//               125MB/s, 1.25GB/s, 100MiB/s (bytes per second; "B" must be upper case).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace psrt::sim {

std::optional<uint64_t> parse_size(const std::string& text);
// Bytes per second; nullopt for anything else, zero or negative.
std::optional<double> parse_bandwidth(const std::string& text);
// "1 Gbit/s", "250 Mbit/s", "1.5 Gbit/s".
std::string format_bandwidth(double bytes_per_s);
// "4 MiB", "512 KiB", "1000 B".
std::string format_size(uint64_t bytes);

}  // namespace psrt::sim
