#include "core/timeline.h"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <filesystem>

#include "core/durable_file.h"

namespace psrt {

namespace {

int64_t micros(Timeline::Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
}

std::string args(const std::string& json) { return json.empty() ? "" : ",\"args\":" + json; }

constexpr const char* kHeader = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
constexpr std::size_t kBatchBytes = 1 << 20;           // written when this much has gathered
constexpr auto kWriteEvery = std::chrono::seconds(1);  // and at least this often

std::string sort_index_event(int pid) {
  return "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":" + std::to_string(pid) +
         ",\"args\":{\"sort_index\":" + std::to_string(pid) + "}}";
}

// The last line repeats the first event, without the comma the others end in.
std::string footer(int pid) {
  return sort_index_event(pid) + "\n]}\n";
}

const char* track_name(int tid) {
  switch (tid) {
    case Timeline::kCompute: return "compute";
    case Timeline::kIo: return "io";
    case Timeline::kPool: return "update pool";
    case Timeline::kChunks: return "chunks in flight";
  }
  return "other";
}

}  // namespace

std::string chunk_label(uint32_t key, uint64_t offset, int64_t iteration) {
  char buf[64];
  if (iteration >= 0) {
    std::snprintf(buf, sizeof buf, "t%u@%llu it %lld", key, (unsigned long long)offset,
                  (long long)iteration);
  } else {
    std::snprintf(buf, sizeof buf, "t%u@%llu", key, (unsigned long long)offset);
  }
  return buf;
}

std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

Timeline::Timeline(const std::string& dir, const std::string& process, int pid)
    : enabled_(!dir.empty()), pid_(pid) {
  if (!enabled_) return;
  const std::error_code ec = make_folder(dir);
  if (ec || !std::filesystem::is_directory(dir)) {  // the trace is an aid: the run goes on
    spdlog::error("timeline: cannot create the folder '{}': {}; this process writes no timeline",
                  dir, ec ? ec.message() : "a file of that name is in the way");
    enabled_ = false;
    return;
  }
  path_ = (std::filesystem::path(dir) / (process + ".json")).string();
  Status st = file_.open(path_);
  if (st) {
    st = file_.append(kHeader);
    if (!st) file_.discard();
  }
  if (!st) {
    spdlog::error("timeline not written: {}; the run carries on", st.message());
    enabled_ = false;
    return;
  }
  if (!file_.note().empty()) spdlog::warn("timeline: {}", file_.note());
  path_ = file_.path();
  add(sort_index_event(pid_));
  add("{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" + std::to_string(pid_) +
      ",\"args\":{\"name\":\"" + json_escape(process) + "\"}}");
  for (int tid : {kCompute, kIo, kPool, kChunks}) {
    add("{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" + std::to_string(pid_) +
        ",\"tid\":" + std::to_string(tid) + ",\"args\":{\"name\":\"" + track_name(tid) + "\"}}");
  }
  writer_ = std::jthread([this](std::stop_token stop) { write_loop(stop); });
}

Timeline::~Timeline() {
  if (!enabled_) return;
  writer_.request_stop();
  if (writer_.joinable()) writer_.join();
  flush();
}

void Timeline::add(std::string event) {
  bool wake = false;
  {
    std::lock_guard lock(mu_);
    if (failed_) return;
    const std::size_t before = pending_bytes_;
    pending_bytes_ += event.size() + 2;
    events_.push_back(std::move(event));
    wake = before < kBatchBytes && pending_bytes_ >= kBatchBytes;
  }
  if (wake) wake_.notify_one();
}

void Timeline::write_loop(std::stop_token stop) {
  while (!stop.stop_requested()) {
    {
      std::unique_lock lock(mu_);
      wake_.wait_for(lock, stop, kWriteEvery, [&] { return pending_bytes_ >= kBatchBytes; });
    }
    std::lock_guard file(file_mu_);
    if (finished_) return;  // flushed: what comes later waits for the next flush
    write_pending();
  }
}

void Timeline::write_pending() {
  std::vector<std::string> batch;
  {
    std::lock_guard lock(mu_);
    batch.swap(events_);
    pending_bytes_ = 0;
    if (failed_ || batch.empty()) return;
  }
  std::string out;
  std::size_t bytes = 0;
  for (const auto& e : batch) bytes += e.size() + 2;
  out.reserve(bytes);
  for (const auto& e : batch) {
    out += e;
    out += ",\n";
  }
  if (const Status st = file_.append(out); !st) give_up(st);
}

void Timeline::give_up(const Status& why) {
  // A full disk once left an empty trace and said nothing. A trace finished once keeps what it
  // had then (a failure while adding to it deleted it).
  if (file_.restore_finished(footer(pid_))) {
    spdlog::error("timeline: events after {} was first written are lost: {}; the run carries on",
                  path_, why.message());
  } else {
    spdlog::error("timeline not written: {}; the run carries on", why.message());
    file_.discard();
  }
  std::lock_guard lock(mu_);
  failed_ = true;
  events_.clear();
  pending_bytes_ = 0;
}

void Timeline::span(Track track, const char* category, const std::string& name,
                    Clock::time_point start, Clock::time_point end, const std::string& args_json) {
  if (!enabled_) return;
  add("{\"ph\":\"X\",\"cat\":\"" + std::string(category) + "\",\"name\":\"" + json_escape(name) +
      "\",\"pid\":" + std::to_string(pid_) + ",\"tid\":" + std::to_string(int(track)) +
      ",\"ts\":" + std::to_string(micros(start)) +
      ",\"dur\":" + std::to_string(std::max<int64_t>(0, micros(end) - micros(start))) +
      args(args_json) + "}");
}

void Timeline::flight(const char* category, const std::string& name, uint64_t id,
                      Clock::time_point start, Clock::time_point end,
                      const std::string& args_json) {
  if (!enabled_) return;
  const std::string common = "\"cat\":\"" + std::string(category) + "\",\"name\":\"" +
                             json_escape(name) + "\",\"pid\":" + std::to_string(pid_) +
                             ",\"tid\":" + std::to_string(int(kChunks)) + ",\"id\":" +
                             std::to_string(id);
  add("{\"ph\":\"b\"," + common + ",\"ts\":" + std::to_string(micros(start)) + args(args_json) +
      "}");
  add("{\"ph\":\"e\"," + common + ",\"ts\":" + std::to_string(micros(end)) + "}");
}

void Timeline::instant(Track track, const char* category, const std::string& name,
                       Clock::time_point at, const std::string& args_json) {
  if (!enabled_) return;
  add("{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"" + std::string(category) + "\",\"name\":\"" +
      json_escape(name) + "\",\"pid\":" + std::to_string(pid_) + ",\"tid\":" +
      std::to_string(int(track)) + ",\"ts\":" + std::to_string(micros(at)) + args(args_json) + "}");
}

void Timeline::flush() {
  if (!enabled_) return;
  std::lock_guard file(file_mu_);
  {
    std::lock_guard lock(mu_);
    if (failed_ || (finished_ && events_.empty())) return;
  }
  if (finished_) {  // events after the first flush: the file is taken up again
    if (const Status st = file_.reopen(); !st) return give_up(st);
    finished_ = false;
  }
  write_pending();
  {
    std::lock_guard lock(mu_);
    if (failed_) return;
  }
  if (const Status st = file_.finish(footer(pid_)); !st) return give_up(st);
  finished_ = true;
  spdlog::info("timeline written to {}", path_);
}

}  // namespace psrt
