// Command-line parsing for psrt's programs: --help prints and exits 0; a bad argument is one line
// "PROGRAM: what (see --help)" on stderr and exit code 2 (DESIGN.md, Errors).
#pragma once

#include <CLI/CLI.hpp>

#include <cmath>
#include <exception>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>

namespace psrt {

// Returns the exit code when the program should stop now, nullopt to carry on.
inline std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv,
                                             const std::string& program) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return 0;
  } catch (const CLI::ParseError& e) {
    std::cerr << program << ": " << e.what() << " (see --help)\n";
    return 2;
  }
  return std::nullopt;
}

// A number from `lo` to `hi`, and a number at all: CLI11's Range and NonNegativeNumber let NaN
// through (psrt-sim --scale nan ended in std::terminate, psrt-launch --grace nan sent SIGKILL at
// once, psrt-place --timeout nan waited for ever).
inline CLI::Validator finite_in(double lo, double hi) {
  return CLI::Validator(
      [lo, hi](std::string& v) -> std::string {
        double x = 0;
        std::size_t used = 0;
        try {
          x = std::stod(v, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used == 0 || used != v.size()) return "'" + v + "' is not a number";
        if (!std::isfinite(x) || x < lo || x > hi) {
          std::ostringstream range;
          range << v << " is not a number from " << lo << " to " << hi;
          return range.str();
        }
        return "";
      },
      "NUMBER");
}

}  // namespace psrt
