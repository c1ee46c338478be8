#include "core/part_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/durable_file.h"

namespace psrt {

namespace {
// Opens (creating) `path` for writing, a regular file only: a FIFO there blocked the daemon in
// open() until the job's start deadline, which then blamed the process as never come.
int open_regular(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0644);
  if (fd < 0) return fd;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
      ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0) {
    ::close(fd);
    errno = EINVAL;
    return -1;
  }
  return fd;
}
}  // namespace

PartFile::~PartFile() {
  if (fd_ >= 0) ::close(fd_);
}

Status PartFile::fail(const std::string& what) {
  Status st = Status::error(part_path() + ": " + what + ": " + std::strerror(errno));
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  return st;
}

Status PartFile::open(const std::string& path) {
  const auto target = follow_links(path);
  if (!target) return target.status();
  path_ = *target;
  reopened_.reset();
  note_.clear();
  std::error_code ec;
  if (std::filesystem::exists(path_, ec) && !std::filesystem::is_regular_file(path_, ec)) {
    return Status::error(path + ": not a regular file (a device, a FIFO or a folder?): it is " +
                         "not replaced");
  }
  if (std::filesystem::exists(part_path(), ec) &&
      !std::filesystem::is_regular_file(part_path(), ec)) {
    return Status::error(part_path() + ": not a regular file (a FIFO, a device or a folder?)");
  }
  fd_ = open_regular(part_path());
  if (fd_ < 0) return fail("cannot create");
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    // A live writer of this name (two jobs sharing a folder): both wrote into one file.
    ::close(fd_);
    const std::string taken = path_;
    const std::filesystem::path p(path_);
    path_ = (p.parent_path() /
             (p.stem().string() + "-" + std::to_string(::getpid()) + p.extension().string()))
                .string();
    note_ = taken +
            " is being written by another process (two jobs sharing this folder?): this "
            "one writes " +
            path_;
    fd_ = open_regular(part_path());
    if (fd_ < 0) return fail("cannot create");
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) return fail("cannot lock");
  }
  if (::ftruncate(fd_, 0) != 0) return fail("cannot empty");
  // The file it replaces keeps its permissions (a private 0600 trace became 0644), and goes now:
  // an earlier run's finished trace beside this run's unfinished one was what merge read.
  if (struct stat old{}; ::stat(path_.c_str(), &old) == 0) {
    [[maybe_unused]] const int rc = ::fchmod(fd_, old.st_mode & 07777);
    ::unlink(path_.c_str());
  }
  body_ = 0;
  return Status::ok();
}

Status PartFile::append(const std::string& bytes) {
  if (fd_ < 0) return Status::error(part_path() + ": not open");
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail("write");
    done += std::size_t(n);
  }
  body_ += bytes.size();
  return Status::ok();
}

Status PartFile::finish(const std::string& footer) {
  const uint64_t body = body_;
  if (Status st = append(footer); !st) return st;
  body_ = body;
  if (::fsync(fd_) != 0) return fail("fsync");
  ::close(fd_);
  fd_ = -1;
  if (::rename(part_path().c_str(), path_.c_str()) != 0) {
    return Status::error(path_ + ": rename: " + std::strerror(errno));
  }
  reopened_.reset();
  // The file is whole under its name: a folder that cannot be synced (rare) does not make it
  // "not written", as it said while the file was there.
  [[maybe_unused]] const Status synced = sync_folder_of(path_);
  return Status::ok();
}

Status PartFile::reopen() {
  if (fd_ >= 0) return Status::ok();
  // Opened before the rename: a failure here leaves the finished file as it was.
  const int fd = ::open(path_.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return Status::error(path_ + ": cannot open to add to it: " + std::strerror(errno));
  if (::rename(path_.c_str(), part_path().c_str()) != 0) {
    Status st = Status::error(path_ + ": rename: " + std::strerror(errno));
    ::close(fd);
    return st;
  }
  fd_ = fd;
  reopened_ = body_;
  if (::ftruncate(fd_, off_t(body_)) != 0 || ::lseek(fd_, 0, SEEK_END) < 0) {
    return fail("cannot cut its footer");
  }
  return Status::ok();
}

Status PartFile::restore_finished(const std::string& footer) {
  if (!reopened_) return Status::error(part_path() + ": was never finished");
  if (fd_ < 0) fd_ = ::open(part_path().c_str(), O_WRONLY | O_CLOEXEC);
  if (fd_ < 0) return fail("cannot open");
  if (::ftruncate(fd_, off_t(*reopened_)) != 0 || ::lseek(fd_, 0, SEEK_END) < 0) {
    return fail("cannot cut what followed");
  }
  body_ = *reopened_;
  return finish(footer);
}

void PartFile::discard() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!path_.empty()) ::unlink(part_path().c_str());
}

}  // namespace psrt
