// Chrome trace-event timeline (viewable in Perfetto or chrome://tracing), one file per process,
// as Horovod's timeline. Thread-safe; a disabled timeline (empty path) costs one branch per call.
// Timestamps are CLOCK_MONOTONIC microseconds, shared by the processes of one host, so
// `psrt-timeline merge` can put a local job's files on one time axis.
//
// The file holds one event per line between a header and a footer line, which keeps merging
// trivial: see tools/timeline. Events are written as the run goes, by a thread of the timeline's
// own, to NAME.json.part (at least every second, and whenever 1 MiB has gathered), which becomes
// NAME.json at flush(): memory stays bounded on long runs and a killed process leaves the part
// file, which `psrt-timeline merge` reads too.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "core/part_file.h"

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
  // Writes what is left and makes the file NAME.json (a finished file or none:
  // core/part_file.h), and logs where, or why not; the run carries on either way. The destructor
  // flushes what a flush has not written yet.
  void flush();
  const std::string& path() const { return path_; }

 private:
  void add(std::string event);
  void write_loop(std::stop_token stop);
  // Appends the gathered events to the file; the caller holds file_mu_.
  void write_pending();
  // Says why the trace is lost, removes the part file and drops events from now on.
  void give_up(const Status& why);

  bool enabled_ = false;
  int pid_ = 0;
  std::string path_;
  std::mutex file_mu_;  // file_ and finished_; taken before mu_
  PartFile file_;
  bool finished_ = false;  // renamed to path_: a later flush takes it up again
  std::mutex mu_;
  std::condition_variable_any wake_;
  std::vector<std::string> events_;  // not written yet
  std::size_t pending_bytes_ = 0;
  bool failed_ = false;  // a write failed: events are dropped
  std::jthread writer_;  // last: stopped before the rest goes
};

// "t<key>@<offset>[ it <iteration>]": how chunks are named on the timeline.
std::string chunk_label(uint32_t key, uint64_t offset, int64_t iteration = -1);

// Escapes a string for a JSON string literal.
std::string json_escape(const std::string& s);

}  // namespace psrt
