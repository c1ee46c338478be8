// psrt-timeline merge: joins the per-process timeline files of a run (the `timeline:` folder)
// into one Chrome trace that Perfetto (ui.perfetto.dev) or chrome://tracing opens; a killed
// process's unfinished NAME.json.part is read as far as it goes.
#include <fcntl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <istream>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "core/cli.h"
#include "core/durable_file.h"
#include "core/status.h"

namespace fs = std::filesystem;

namespace {

// A line longer than this is no event of ours (those are a few hundred bytes): the NUL bytes a
// crashed node's disk can leave at the end of a part file made one line of a gigabyte, read
// whole into memory (2 GB for 1 GB of NULs).
constexpr std::size_t kMaxLine = 1 << 20;

struct FileEvents {
  std::vector<std::string> events;
  int processes = 0;  // process_name events: one in a process's file, several in a merged trace
  int truncated = 0;  // lines cut short (a file copied while written, or a disk that filled)
  int too_long = 0;   // lines over kMaxLine, skipped without being held
  int not_events = 0;  // other lines that are neither an event nor the footer (were dropped unsaid)
};

// The lines of a stream, each at most kMaxLine long: the rest of a longer one is read past, not
// held.
class LineReader {
 public:
  explicit LineReader(std::istream& in) : in_(in) {}
  // The next line, without its '\n', in `line`; false at the end. Of a line over kMaxLine,
  // `line` holds nothing and too_long() is true.
  bool next(std::string& line) {
    line.clear();
    too_long_ = false;
    bool any = false;
    for (;;) {
      if (pos_ == end_) {
        in_.read(buf_.data(), std::streamsize(buf_.size()));
        end_ = std::size_t(in_.gcount());
        pos_ = 0;
        if (end_ == 0) return any;
      }
      any = true;
      const char* start = buf_.data() + pos_;
      const auto* nl = static_cast<const char*>(std::memchr(start, '\n', end_ - pos_));
      const std::size_t n = nl ? std::size_t(nl - start) : end_ - pos_;
      too_long_ = too_long_ || line.size() + n > kMaxLine;
      if (too_long_)
        line.clear();
      else
        line.append(start, n);
      pos_ += n + (nl ? 1 : 0);
      if (nl) return true;
    }
  }
  bool too_long() const { return too_long_; }

 private:
  std::istream& in_;
  std::vector<char> buf_ = std::vector<char>(1 << 16);
  std::size_t pos_ = 0, end_ = 0;
  bool too_long_ = false;
};

// The event lines of one of our timeline files (one event per line, see core/timeline.h).
// Whether `line` is one JSON object, whole: its braces and brackets close, outside strings, at
// its last character. A line cut short after an inner '}' ("args":{"name":"x"}) ended in '}'
// too, and the merge wrote a trace no reader could parse.
bool whole_object(const std::string& line) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (in_string) {
      if (c == '\\') ++i;  // the escaped character
      else if (c == '"') in_string = false;
      else if (static_cast<unsigned char>(c) < 0x20) return false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '{' || c == '[') ++depth;
    else if (c == '}' || c == ']') --depth;
    if (depth < 0 || (depth == 0 && i + 1 < line.size())) return false;
  }
  return depth == 0 && !in_string && !line.empty() && line.front() == '{';
}

bool read_events(const fs::path& file, FileEvents& out, std::string& error) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) {  // a FIFO blocked the merge for ever
    error = file.string() + (fs::exists(file, ec) ? ": not a regular file" : ": cannot open");
    return false;
  }
  std::ifstream in(file);
  if (!in) {
    error = file.string() + ": cannot open";
    return false;
  }
  LineReader lines(in);
  std::string line;
  lines.next(line);
  if (line.rfind("{\"displayTimeUnit\"", 0) != 0) {
    error = file.string() + ": not a psrt timeline file";
    return false;
  }
  while (lines.next(line)) {
    if (lines.too_long()) {
      ++out.too_long;
      continue;
    }
    if (!line.empty() && line.back() == '\r') line.pop_back();  // CRLF line ends
    if (line.rfind("{\"ph\":", 0) != 0) {
      out.not_events += !line.empty() && line != "]}";  // the footer, a blank line
      continue;
    }
    if (!line.empty() && line.back() == ',') line.pop_back();
    if (!whole_object(line)) {  // a line cut short would break the whole trace
      ++out.truncated;
      continue;
    }
    if (line.rfind("{\"ph\":\"M\",\"name\":\"process_name\"", 0) == 0) ++out.processes;
    out.events.push_back(std::move(line));
  }
  return true;
}

// What a file's skipped lines were, as one line on stderr (none when it skipped none): the
// merge goes on without them.
void say_skipped(const fs::path& file, const FileEvents& got) {
  std::string what;
  const auto add = [&](int n, const char* text) {
    if (n > 0) what += (what.empty() ? "" : ", ") + std::to_string(n) + text;
  };
  add(got.truncated, " event line(s) cut short");
  add(got.too_long, " line(s) over 1 MiB (not an event: NUL bytes of a crash?)");
  add(got.not_events, " line(s) that are not events");
  if (what.empty()) return;
  std::fprintf(stderr, "psrt-timeline: %s: skipped %s\n", file.string().c_str(), what.c_str());
}

// An output in one of the input folders that is one process's own trace (`merge tl -o
// tl/worker-0.json`) was left out of the inputs and overwritten: its events were gone. Says why
// it is refused, or "" (a FIFO or a terminal is not read: it would block; an earlier merge there
// is replaced).
std::string run_file_in_inputs(const std::string& output, const std::vector<std::string>& inputs) {
  std::error_code ec;
  if (!fs::is_regular_file(output, ec)) return "";
  const fs::path folder = fs::path(output).has_parent_path() ? fs::path(output).parent_path()
                                                              : fs::path(".");
  for (const auto& in : inputs) {  // `merge w0.json w1.json -o w0.json` lost worker 0's own file
    if (fs::is_regular_file(in, ec) && fs::equivalent(output, in, ec)) {
      return "-o " + output + " is also an input: not overwritten; write the merge elsewhere";
    }
  }
  for (const auto& in : inputs) {
    if (!fs::is_directory(in, ec) || !fs::equivalent(folder, in, ec)) continue;
    std::string error;
    FileEvents got;
    if (read_events(output, got, error) && got.processes == 1) {
      return "-o " + output + " holds one process's trace (a file of the run in " + in +
             "): not overwritten; write the merge elsewhere";
    }
    return "";
  }
  return "";
}

// NAME.json.part: a trace its process was still writing when it ended (killed): read where no
// NAME.json finished beside it (core/timeline.h).
bool unfinished_trace(const fs::path& file) {
  if (file.extension() != ".part" || file.stem().extension() != ".json") return false;
  std::error_code ec;
  return !fs::exists(fs::path(file).replace_extension(), ec);
}

// The files named by `inputs` (files, and the traces in folders: `from_folder`), sorted; says
// why not (a folder that cannot be read, a link loop: these ended in std::terminate).
std::string list_inputs(const std::vector<std::string>& inputs, const std::string& output,
                        std::vector<fs::path>& files, std::set<fs::path>& from_folder) {
  std::error_code ec;
  for (const auto& in : inputs) {
    if (!fs::is_directory(in, ec)) {
      files.emplace_back(in);  // read_events says what is wrong with it
      continue;
    }
    for (fs::directory_iterator it(in, ec), end; !ec && it != end; it.increment(ec)) {
      const fs::path& p = it->path();
      std::error_code same;
      if (fs::absolute(p, same) == fs::absolute(output, same)) continue;
      std::error_code kind;
      if (!fs::is_regular_file(p, kind)) continue;  // a FIFO or a folder named *.json
      if (p.extension() == ".json" || unfinished_trace(p)) {
        files.push_back(p);
        from_folder.insert(p);
      }
    }
    if (ec) return in + ": cannot read the folder: " + ec.message();
  }
  std::sort(files.begin(), files.end());
  return files.empty() ? "no timeline files in the inputs" : "";
}

// The merged trace of `events` at `path` (write_output).
psrt::Status write_merge(const std::string& path, const std::deque<std::string>& events) {
  static constexpr std::string_view kHead = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  static constexpr std::string_view kNext = ",\n", kLast = "\n", kFoot = "]}\n";
  const auto bytes = [](std::string_view text) {
    return std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size());
  };
  std::vector<std::span<const uint8_t>> parts;
  parts.reserve(2 * events.size() + 2);
  parts.push_back(bytes(kHead));
  for (std::size_t i = 0; i < events.size(); ++i) {
    parts.push_back(bytes(events[i]));
    parts.push_back(bytes(i + 1 < events.size() ? kNext : kLast));
  }
  parts.push_back(bytes(kFoot));
  return psrt::write_output(path, parts);
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
  if (const auto rc = psrt::parse_command_line(app, argc, argv, "psrt-timeline")) return *rc;

  if (const std::string why = run_file_in_inputs(output, inputs); !why.empty()) {
    std::fprintf(stderr, "psrt-timeline: %s\n", why.c_str());
    return 2;
  }
  std::vector<fs::path> files;
  std::set<fs::path> from_folder;
  if (const std::string why = list_inputs(inputs, output, files, from_folder); !why.empty()) {
    std::fprintf(stderr, "psrt-timeline: %s\n", why.c_str());
    return 2;
  }
  // An event given twice (a file named twice) is written once. `seen` views the events kept (a
  // deque does not move them): a set of copies took 3.7 times the input in memory.
  std::deque<std::string> events;
  std::unordered_set<std::string_view> seen;
  std::size_t merged = 0;
  for (const auto& f : files) {
    std::string error;
    FileEvents got;
    if (!read_events(f, got, error)) {
      std::fprintf(stderr, "psrt-timeline: %s\n", error.c_str());
      return 2;
    }
    if (got.processes > 1 && from_folder.count(f)) {  // an earlier merge in the run's folder
      std::fprintf(stderr, "psrt-timeline: skipped %s: a merged trace\n", f.string().c_str());
      continue;
    }
    if (f.extension() == ".part") {
      std::fprintf(stderr,
                   "psrt-timeline: %s: unfinished (its process did not end), read as far "
                   "as it goes\n",
                   f.string().c_str());
    }
    say_skipped(f, got);
    for (auto& e : got.events) {
      if (seen.count(e) != 0) continue;
      events.push_back(std::move(e));
      seen.insert(events.back());
    }
    ++merged;
  }
  if (const psrt::Status st = write_merge(output, events); !st) {
    std::fprintf(stderr, "psrt-timeline: %s\n", st.message().c_str());
    return 2;
  }
  std::printf("psrt-timeline: %zu events from %zu files -> %s\n", events.size(), merged,
              output.c_str());
  return 0;
}
