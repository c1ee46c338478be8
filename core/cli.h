// Command-line parsing for psrt's programs: --help prints and exits 0; a bad argument is one line
// "PROGRAM: what (see --help)" on stderr and exit code 2 (DESIGN.md, Errors).
#pragma once

#include <CLI/CLI.hpp>

#include <iostream>
#include <optional>
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

}  // namespace psrt
