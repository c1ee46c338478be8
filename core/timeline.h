// Chrome trace-event timeline (viewable in Perfetto or chrome://tracing), one file per process,
// as Horovod's timeline. Thread-safe; a disabled timeline (empty path) costs one branch per call.
// Timestamps are CLOCK_MONOTONIC microseconds, shared by the processes of one host, so
// `psrt-timeline merge` can put a local job's files on one time axis.
//
// The file holds one event per line between a header and a footer line, which keeps merging
// trivial: see tools/timeline.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace psrt {

class Timeline {
 public:
  using Clock = std::chrono::steady_clock;
  enum Track : int { kCompute = 1, kIo = 2, kPool = 3, kChunks = 4 };

  Timeline() = default;  // disabled
  // Writes `dir`/`process`.json at flush() or destruction; `pid` orders processes in the viewer.
  Timeline(const std::string& dir, const std::string& process, int pid);
  ~Timeline();
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  bool enabled() const { return enabled_; }
  // A span on a track ("X" event).
  void span(Track track, const char* category, const std::string& name, Clock::time_point start,
            Clock::time_point end, const std::string& args_json = "");
  // A span that may overlap others on its track (an async pair), e.g. a chunk in flight.
  void flight(const char* category, const std::string& name, uint64_t id, Clock::time_point start,
              Clock::time_point end, const std::string& args_json = "");
  void instant(Track track, const char* category, const std::string& name, Clock::time_point at,
               const std::string& args_json = "");
  // Writes the trace (whole or not at all: core/durable_file.h) and logs where, or why not; the
  // run carries on either way. The destructor flushes what a flush has not written yet.
  void flush();
  const std::string& path() const { return path_; }

 private:
  void add(std::string event);

  bool enabled_ = false;
  int pid_ = 0;
  std::string path_;
  std::mutex mu_;
  std::vector<std::string> events_;
  std::size_t flushed_ = 0;  // events_ written by the last flush
};

// "t<key>@<offset>[ it <iteration>]": how chunks are named on the timeline.
std::string chunk_label(uint32_t key, uint64_t offset, int64_t iteration = -1);

// Escapes a string for a JSON string literal.
std::string json_escape(const std::string& s);

}  // namespace psrt
