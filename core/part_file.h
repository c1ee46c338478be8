// A file written piece by piece while a run goes on (a timeline trace): appended to PATH.part,
// which a kill leaves readable up to its last whole append, and made PATH by finish() (fsync,
// rename, the folder fsynced), so that PATH is only ever a finished file. One owner; not
// thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/status.h"

namespace psrt {

class PartFile {
 public:
  PartFile() = default;  // closed
  ~PartFile();
  PartFile(const PartFile&) = delete;
  PartFile& operator=(const PartFile&) = delete;

  // Creates (or empties) PATH.part, locked while this object writes it, and removes an earlier
  // PATH (whose mode the new one keeps). Where another live process writes PATH.part, this one
  // writes STEM-PID.EXT instead (note() says so). Errors read "PATH.part: cannot create:
  // strerror"; a path through symbolic links writes their target, a folder or a device there is
  // an error.
  Status open(const std::string& path);
  const std::string& note() const { return note_; }
  bool is_open() const { return fd_ >= 0; }
  const std::string& path() const { return path_; }
  std::string part_path() const { return path_ + ".part"; }

  Status append(const std::string& bytes);
  // Appends `footer`, fsyncs and renames PATH.part to PATH. The file is closed after, and
  // reopen() takes it up again without the footer (for what comes after a first finish).
  Status finish(const std::string& footer);
  Status reopen();
  // After a failure following reopen(): the file as the last finish() left it, finished again
  // (the events added since are lost); an error where it cannot be.
  Status restore_finished(const std::string& footer);
  // Closes and removes PATH.part (after a failed write: no half trace is left behind).
  void discard();

 private:
  Status fail(const std::string& what);

  std::string path_;  // the final name, links followed
  int fd_ = -1;
  uint64_t body_ = 0;  // bytes before the footer
  std::optional<uint64_t> reopened_;  // body_ of the finished file reopen() took up
  std::string note_;
};

}  // namespace psrt
