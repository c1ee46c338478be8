// The benchmark's rows, tables, files and target lines.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace psrt::bench {

struct Row {
  std::string model;
  uint32_t devices = 0;
  bool heterogeneous = false;
  std::string placer;
  bool feasible = false;
  double step_ms = 0, search_ms = 0;
  uint64_t cut_bytes = 0, peak_bytes = 0;
  bool over_memory = false;
  std::string error = {};
};

// One case's rows as a table, the best (least simulated step) marked with '*'.
void print_case(const std::vector<Row>& rows);
// placement.csv (every row, `best` column), placement_scaling.dat (nodes, search ms) and
// placement_chart.dat (step time relative to NetPlacer, 4 heterogeneous devices) and
// placement.gp (a gnuplot script charting both) in `dir`, each whole or not at all; the first
// that cannot be written ends it: "PATH: what: strerror".
Status write_outputs(const std::string& dir, const std::vector<Row>& rows,
                     const std::vector<std::pair<uint32_t, double>>& scaling);
// MET / MISSED for the four targets, with the reason wherever a baseline wins.
void print_targets(const std::vector<Row>& rows,
                   const std::vector<std::pair<uint32_t, double>>& scaling, bool smoke);

}  // namespace psrt::bench
