#include "core/part_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/durable_file.h"

namespace psrt {

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
  std::error_code ec;
  if (std::filesystem::exists(path_, ec) && !std::filesystem::is_regular_file(path_, ec)) {
    return Status::error(path + ": not a regular file (a device, a FIFO or a folder?): it is " +
                         "not replaced");
  }
  fd_ = ::open(part_path().c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) return fail("cannot create");
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
  return sync_folder_of(path_);
}

Status PartFile::reopen() {
  if (fd_ >= 0) return Status::ok();
  if (::rename(path_.c_str(), part_path().c_str()) != 0) return fail("rename back");
  fd_ = ::open(part_path().c_str(), O_WRONLY | O_CLOEXEC);
  if (fd_ < 0) return fail("cannot open");
  if (::ftruncate(fd_, off_t(body_)) != 0 || ::lseek(fd_, 0, SEEK_END) < 0) {
    return fail("cannot cut its footer");
  }
  return Status::ok();
}

void PartFile::discard() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!path_.empty()) ::unlink(part_path().c_str());
}

}  // namespace psrt
