// One of psrt-launch's output streams (stdout, stderr), written by a thread of its own. The launch
// reads its children's pipes on one thread; writing their lines there too meant that a reader who
// stopped reading (a paused pager, `| sleep 600`) stopped the launch, its children then blocked on
// their next log line, and the whole job stalled until its progress timeout, or for ever. Lines
// now wait here, up to `limit_bytes`; past that they are dropped, and where the reader takes lines
// again a line says how many were lost. The job goes on either way.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

namespace psrt::launch {

class OutputQueue {
 public:
  OutputQueue(int fd, std::size_t limit_bytes);
  // Ends the thread once what waits is written; a thread still blocked on a reader that takes
  // nothing is left to the process's exit (finish() first where the output matters).
  ~OutputQueue();
  OutputQueue(const OutputQueue&) = delete;
  OutputQueue& operator=(const OutputQueue&) = delete;

  // Queues one line (without its '\n'); false if it was dropped. `always`: past the limit too
  // (the launch's own few lines: why the job stopped, how it ended).
  bool put(const std::string& line, bool always = false);
  // Says where lines were dropped since the last line taken, if any (put() does so itself).
  void note_drops();
  // An eventfd, readable when the reader went away (a write met EPIPE) and each time the queue
  // empties; read it with `consume_event()`.
  int event_fd() const;
  void consume_event() const;
  bool broken() const;  // the reader went away: nothing more is written
  bool idle() const;    // nothing waits to be written (or the reader went away)
  // Lines dropped for the limit, or lost to a failed write (a full disk).
  uint64_t dropped_lines() const;
  uint64_t failed_lines() const;  // of those, lost to a failed write

 private:
  struct State;
  std::shared_ptr<State> state_;
  std::thread thread_;
};

}  // namespace psrt::launch
