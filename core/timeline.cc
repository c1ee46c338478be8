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
  add("{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" + std::to_string(pid_) +
      ",\"args\":{\"name\":\"" + json_escape(process) + "\"}}");
  add("{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":" + std::to_string(pid_) +
      ",\"args\":{\"sort_index\":" + std::to_string(pid_) + "}}");
  for (int tid : {kCompute, kIo, kPool, kChunks}) {
    add("{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" + std::to_string(pid_) +
        ",\"tid\":" + std::to_string(tid) + ",\"args\":{\"name\":\"" + track_name(tid) + "\"}}");
  }
}

Timeline::~Timeline() {
  bool pending = false;
  {
    std::lock_guard lock(mu_);
    pending = flushed_ != events_.size();
  }
  if (pending) flush();
}

void Timeline::add(std::string event) {
  std::lock_guard lock(mu_);
  events_.push_back(std::move(event));
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
  std::lock_guard lock(mu_);
  std::string out = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  for (std::size_t i = 0; i < events_.size(); ++i) {
    out += events_[i];
    out += i + 1 < events_.size() ? ",\n" : "\n";
  }
  out += "]}\n";
  flushed_ = events_.size();
  // A full disk once left an empty trace and said nothing.
  const Status st = write_durably(path_, std::span(reinterpret_cast<const uint8_t*>(out.data()),
                                                   out.size()));
  if (st) {
    spdlog::info("timeline written to {}", path_);
  } else {
    spdlog::error("timeline not written: {}; the run carries on", st.message());
  }
}

}  // namespace psrt
