// psrt-timeline merge: joins the per-process timeline files of a run (the `timeline:` folder)
// into one Chrome trace that Perfetto (ui.perfetto.dev) or chrome://tracing opens.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

// The event lines of one of our timeline files (one event per line, see core/timeline.h).
bool read_events(const fs::path& file, std::vector<std::string>& events, std::string& error) {
  std::ifstream in(file);
  if (!in) {
    error = file.string() + ": cannot open";
    return false;
  }
  std::string line;
  std::getline(in, line);
  if (line.rfind("{\"displayTimeUnit\"", 0) != 0) {
    error = file.string() + ": not a psrt timeline file";
    return false;
  }
  while (std::getline(in, line)) {
    if (line.rfind("{\"ph\":", 0) != 0) continue;  // the footer
    if (!line.empty() && line.back() == ',') line.pop_back();
    events.push_back(std::move(line));
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"psrt-timeline: tools for psrt's Chrome-trace timelines"};
  app.require_subcommand(1);
  auto* merge = app.add_subcommand("merge", "join a run's per-process files into one trace");
  std::vector<std::string> inputs;
  std::string output = "timeline.json";
  merge->add_option("inputs", inputs, "timeline folders or files")->required();
  merge->add_option("-o,--output", output, "merged trace")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  std::vector<fs::path> files;
  for (const auto& in : inputs) {
    if (fs::is_directory(in)) {
      for (const auto& e : fs::directory_iterator(in)) {
        if (e.path().extension() == ".json" && fs::absolute(e.path()) != fs::absolute(output)) {
          files.push_back(e.path());
        }
      }
    } else {
      files.emplace_back(in);
    }
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    std::fprintf(stderr, "psrt-timeline: no timeline files in the inputs\n");
    return 2;
  }
  std::vector<std::string> events;
  for (const auto& f : files) {
    std::string error;
    if (!read_events(f, events, error)) {
      std::fprintf(stderr, "psrt-timeline: %s\n", error.c_str());
      return 2;
    }
  }
  std::ofstream out(output, std::ios::trunc);
  out << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  for (std::size_t i = 0; i < events.size(); ++i) {
    out << events[i] << (i + 1 < events.size() ? ",\n" : "\n");
  }
  out << "]}\n";
  if (!out) {
    std::fprintf(stderr, "psrt-timeline: cannot write %s\n", output.c_str());
    return 2;
  }
  std::printf("psrt-timeline: %zu events from %zu files -> %s\n", events.size(), files.size(),
              output.c_str());
  return 0;
}
