#include "tools/launch/output_queue.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <stdexcept>

namespace psrt::launch {

struct OutputQueue::State {
  int fd = -1;
  std::size_t limit = 0;
  int event_fd = -1;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::string> queue;
  std::size_t bytes = 0;  // waiting and being written
  uint64_t dropped = 0;
  uint64_t dropped_here = 0;  // since the last line taken
  uint64_t failed = 0;        // lost to a failed write
  bool writing = false;
  bool stop = false;
  bool broken = false;

  ~State() {
    if (event_fd >= 0) ::close(event_fd);
  }
  // Where lines were dropped, one that says so: before the next line taken.
  void push_drop_note() {
    if (dropped_here == 0) return;
    std::string note = "psrt-launch: " + std::to_string(dropped_here) +
                       " lines dropped here: this output's reader fell " +
                       std::to_string(limit / 1024) +
                       " KiB behind (they are lost; the job was not held up)\n";
    bytes += note.size();
    queue.push_back(std::move(note));
    dropped_here = 0;
    cv.notify_one();
  }
  // The writer thread: writes what waits, in one write each time, until stopped with nothing
  // left or the reader goes away.
  void drain();
  void signal_event() const {
    const uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = ::write(event_fd, &one, sizeof one);
  }
};

namespace {

enum class Written { kAll, kReaderGone, kFailed };

// Writes all of `text`. kReaderGone: its reader went away (EPIPE). kFailed: another error (a full
// disk under `> file`) lost the text, and the launch goes on, as a daemon's own log does.
Written write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n > 0) {
      done += std::size_t(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {  // a non-blocking stdout
      pollfd p{fd, POLLOUT, 0};
      ::poll(&p, 1, -1);
    } else {
      return n < 0 && errno == EPIPE ? Written::kReaderGone : Written::kFailed;
    }
  }
  return Written::kAll;
}

}  // namespace

void OutputQueue::State::drain() {
  std::unique_lock lock(mu);
  for (;;) {
    cv.wait(lock, [&] { return stop || !queue.empty(); });
    if (queue.empty()) return;  // stopped, nothing left
    std::string batch;  // everything waiting, in one write
    for (; !queue.empty(); queue.pop_front()) batch += queue.front();
    writing = true;
    lock.unlock();
    const Written written = write_all(fd, batch);
    lock.lock();
    writing = false;
    bytes -= batch.size();
    if (written == Written::kFailed) {  // counted with the lines dropped, and on their own
      const auto lines = uint64_t(std::count(batch.begin(), batch.end(), '\n'));
      dropped += lines;
      failed += lines;
    }
    const bool ok = written != Written::kReaderGone;
    if (!ok) {
      broken = true;
      queue.clear();
      bytes = 0;
    }
    if (queue.empty()) signal_event();
    if (!ok) return;
  }
}

OutputQueue::OutputQueue(int fd, std::size_t limit_bytes) : state_(std::make_shared<State>()) {
  state_->fd = fd;
  state_->limit = limit_bytes;
  state_->event_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (state_->event_fd < 0) throw std::runtime_error("eventfd failed");
  thread_ = std::thread([s = state_] { s->drain(); });
}

OutputQueue::~OutputQueue() {
  {
    std::lock_guard lock(state_->mu);
    state_->stop = true;
  }
  state_->cv.notify_one();
  if (idle()) {
    thread_.join();
  } else {
    thread_.detach();  // blocked on a reader that takes nothing: the exit ends it
  }
}

bool OutputQueue::put(const std::string& line, bool always) {
  std::lock_guard lock(state_->mu);
  State& s = *state_;
  if (s.broken) return false;
  // A line longer than the limit is still taken when nothing waits.
  if (!always && s.bytes > 0 && s.bytes + line.size() + 1 > s.limit) {
    ++s.dropped;
    ++s.dropped_here;
    return false;
  }
  s.push_drop_note();
  s.bytes += line.size() + 1;
  s.queue.push_back(line + '\n');
  s.cv.notify_one();
  return true;
}

void OutputQueue::note_drops() {
  std::lock_guard lock(state_->mu);
  if (!state_->broken) state_->push_drop_note();
}

int OutputQueue::event_fd() const { return state_->event_fd; }

void OutputQueue::consume_event() const {
  uint64_t count = 0;
  [[maybe_unused]] const ssize_t n = ::read(state_->event_fd, &count, sizeof count);
}

bool OutputQueue::broken() const {
  std::lock_guard lock(state_->mu);
  return state_->broken;
}

bool OutputQueue::idle() const {
  std::lock_guard lock(state_->mu);
  return state_->broken || (state_->queue.empty() && !state_->writing);
}

uint64_t OutputQueue::failed_lines() const {
  std::lock_guard lock(state_->mu);
  return state_->failed;
}

uint64_t OutputQueue::dropped_lines() const {
  std::lock_guard lock(state_->mu);
  return state_->dropped;
}

}  // namespace psrt::launch
