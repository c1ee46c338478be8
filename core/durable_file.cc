#include "core/durable_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

namespace psrt {

namespace {

Status sys_error(const std::string& path, const std::string& what) {
  return Status::error(path + ": " + what + ": " + std::strerror(errno));
}

// Writes all of `parts`, one after the other, to `fd` and fsyncs it.
Status write_all(int fd, std::span<const std::span<const uint8_t>> parts,
                 const std::string& path) {
  PSRT_RETURN_IF_ERROR(write_fully(fd, parts, path));
  return ::fsync(fd) == 0 ? Status::ok() : sys_error(path, "fsync");
}

// The file `path` names for writing: through a symbolic link to its target (the rename replaced
// the link with a file and left its target as it was); an existing target that is not a regular
// file (a device such as /dev/full, a FIFO, a folder) is refused, where the rename replaced it.
Result<std::string> write_target(const std::string& path) {
  const auto followed = follow_links(path);
  if (!followed) return followed.status();
  const std::string& target = *followed;
  std::error_code ec;
  const auto st = std::filesystem::status(target, ec);
  if (!ec && std::filesystem::exists(st) && !std::filesystem::is_regular_file(st)) {
    return Status::error(path + ": not a regular file (a device, a FIFO or a folder?): it is " +
                         "not replaced");
  }
  return target;
}

// Opens the temporary file beside `path`: "path.tmp", or, where another writer has that one (two
// workers given one job.dump_params), "path.tmp.PID.N": one writer's failure removed the other's
// file, and both wrote into one. A folder in its place is an error, as a full disk would be.
int open_temporary(const std::string& path, std::string& tmp) {
  constexpr int kFlags = O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC;
  tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), kFlags, 0644);
  if (fd >= 0 || errno != EEXIST) return fd;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(std::filesystem::symlink_status(tmp, ec))) {
    errno = EEXIST;
    return -1;
  }
  static std::atomic<uint64_t> next{0};
  tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(next++);
  return ::open(tmp.c_str(), kFlags, 0644);
}

}  // namespace

Result<std::string> follow_links(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path target = path;
  // Link by link (weakly_canonical stopped at a link whose target does not exist yet, which was
  // then replaced); a loop is named by the limit.
  for (int links = 0; fs::is_symlink(target, ec); ++links) {
    if (links == 40) return Status::error(path + ": too many levels of symbolic links");
    const fs::path next = fs::read_symlink(target, ec);
    if (ec) return Status::error(path + ": cannot follow its link: " + ec.message());
    target = next.is_absolute() ? next : target.parent_path() / next;
  }
  return target.string();
}

std::error_code make_folder(const std::string& dir) {
  const auto followed = follow_links(dir);
  std::error_code ec;
  std::filesystem::create_directories(followed ? *followed : dir, ec);
  return ec;
}

uint32_t crc32_of(std::span<const uint8_t> bytes) {
  uLong crc = crc32(0L, Z_NULL, 0);
  const uint8_t* p = bytes.data();
  std::size_t n = bytes.size();
  while (n > 0) {
    const auto step = static_cast<uInt>(std::min<std::size_t>(n, 1u << 30));
    crc = crc32(crc, p, step);
    p += step;
    n -= step;
  }
  return uint32_t(crc);
}

Status write_durably(const std::string& path, std::span<const uint8_t> bytes) {
  const std::span<const uint8_t> whole[] = {bytes};
  return write_durably(path, std::span<const std::span<const uint8_t>>(whole));
}

Status write_durably(const std::string& given,
                     std::span<const std::span<const uint8_t>> parts) {
  const auto target = write_target(given);
  if (!target) return target.status();
  const std::string& path = *target;
  std::string tmp;
  const int fd = open_temporary(path, tmp);
  if (fd < 0) return sys_error(given, "cannot create " + tmp);
  // The file it replaces keeps its permissions (a private 0600 dump became 0644).
  if (struct stat old {}; ::stat(path.c_str(), &old) == 0) {
    [[maybe_unused]] const int rc = ::fchmod(fd, old.st_mode & 07777);
  }
  Status st = write_all(fd, parts, given);
  ::close(fd);
  if (st && ::rename(tmp.c_str(), path.c_str()) != 0) st = sys_error(given, "rename");
  if (!st) {
    ::unlink(tmp.c_str());
    return st;
  }
  return sync_folder_of(path);  // the rename is durable once the folder is
}

Status sync_folder_of(const std::string& path) {
  const std::string dir = std::filesystem::path(path).parent_path().string();
  const int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return sys_error(path, "cannot open its folder");
  const int rc = ::fsync(dfd);
  ::close(dfd);
  return rc == 0 ? Status::ok() : sys_error(path, "fsync of its folder");
}

ssize_t read_fully(int fd, uint8_t* dst, std::size_t size) {
  std::size_t done = 0;
  while (done < size) {
    const ssize_t got = ::read(fd, dst + done, size - done);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return -1;
    if (got == 0) break;
    done += std::size_t(got);
  }
  return ssize_t(done);
}

Status write_fully(int fd, std::span<const std::span<const uint8_t>> parts,
                   const std::string& path) {
  for (const auto bytes : parts) {
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n == 0) errno = EIO;
      if (n <= 0) return sys_error(path, "write");
      done += std::size_t(n);
    }
  }
  return Status::ok();
}

Result<std::vector<uint8_t>> read_whole_file(const std::string& path, std::string_view magic) {
  // O_NONBLOCK: a FIFO named like the file does not block the open (it is refused below).
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return sys_error(path, "cannot open");
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::error(path + ": not a regular file");
  }
  std::vector<uint8_t> bytes(std::min<std::size_t>(magic.size(), std::size_t(st.st_size)));
  ssize_t got = read_fully(fd, bytes.data(), bytes.size());
  if (got >= 0 && std::size_t(got) == magic.size() &&
      std::memcmp(bytes.data(), magic.data(), magic.size()) == 0) {
    const std::size_t head = magic.size();
    bytes.resize(std::max<std::size_t>(std::size_t(st.st_size), head));
    got = read_fully(fd, bytes.data() + head, bytes.size() - head);
    if (got >= 0) bytes.resize(head + std::size_t(got));
    std::vector<uint8_t> block(got >= 0 ? std::size_t(1) << 16 : 0);
    while (got > 0 && (got = read_fully(fd, block.data(), block.size())) > 0) {  // it grew
      bytes.insert(bytes.end(), block.begin(), block.begin() + got);
    }
  } else if (got >= 0) {
    bytes.resize(std::size_t(got));  // not what the caller reads: its check refuses these
  }
  const Status error = got < 0 ? sys_error(path, "read error") : Status::ok();
  ::close(fd);
  if (!error) return error;
  return bytes;
}

namespace {
// The descriptor a path names itself (/dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N);
// -1: none. `-o /dev/stdout >> all.log` replaced all.log: the path led to that regular file,
// which the whole-or-nothing write renamed a new file over.
int named_descriptor(const std::string& path) {
  if (path == "/dev/stdout") return STDOUT_FILENO;
  if (path == "/dev/stderr") return STDERR_FILENO;
  for (const std::string_view prefix : {"/dev/fd/", "/proc/self/fd/"}) {
    if (path.rfind(prefix, 0) != 0) continue;
    int fd = -1;
    const char* first = path.data() + prefix.size();
    const auto [end, ec] = std::from_chars(first, path.data() + path.size(), fd);
    return ec == std::errc() && end == path.data() + path.size() ? fd : -1;
  }
  return -1;
}
}  // namespace

// Before, psrt-timeline merge and psrt-place left a truncated file in place of the earlier one
// on a full disk and said it was written; then --out /dev/stdout was refused.
Status write_output(const std::string& path, std::span<const std::span<const uint8_t>> parts) {
  namespace fs = std::filesystem;
  if (const int fd = named_descriptor(path); fd >= 0) return write_fully(fd, parts, path);
  std::error_code ec;
  const fs::file_status kind = fs::status(path, ec);
  if (ec || !fs::exists(kind) || fs::is_regular_file(kind) || fs::is_directory(kind)) {
    return write_durably(path, parts);  // which says what is wrong with a folder
  }
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return Status::error(path + ": cannot open: " + std::strerror(errno));
  Status st = write_fully(fd, parts, path);
  if (::close(fd) != 0 && st) st = Status::error(path + ": close: " + std::strerror(errno));
  return st;
}

std::string file_safe_id(const std::string& job_id) {
  std::string job = job_id;
  bool replaced = false;
  for (char& ch : job) {
    const bool plain = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                       (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-';
    if (!plain) {
      ch = '_';
      replaced = true;
    }
  }
  if (replaced) {  // 'team+a' and 'team_a' must not share files (a fresh start deletes its own)
    char tag[16];
    const auto* bytes = reinterpret_cast<const uint8_t*>(job_id.data());
    std::snprintf(tag, sizeof tag, "~%08x", crc32_of(std::span(bytes, job_id.size())));
    job += tag;
  }
  return job;
}

namespace {

std::string file_prefix(const std::string& job_id, const std::string& role, uint32_t rank) {
  return file_safe_id(job_id) + "-" + role + "-" + std::to_string(rank) + "-";
}

}  // namespace

std::string checkpoint_file(const std::string& dir, const std::string& job_id,
                            const std::string& role, uint32_t rank, uint64_t iteration) {
  char digits[32];
  std::snprintf(digits, sizeof digits, "%012llu.ckpt", (unsigned long long)iteration);
  return (std::filesystem::path(dir) / (file_prefix(job_id, role, rank) + digits)).string();
}

std::map<uint64_t, std::string> list_checkpoint_files(const std::string& dir,
                                                      const std::string& job_id,
                                                      const std::string& role, uint32_t rank) {
  std::map<uint64_t, std::string> out;
  std::error_code ec;
  const std::string prefix = file_prefix(job_id, role, rank);
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() != prefix.size() + 12 + 5 || name.rfind(prefix, 0) != 0 ||
        name.substr(name.size() - 5) != ".ckpt") {
      continue;
    }
    const std::string digits = name.substr(prefix.size(), 12);
    if (digits.find_first_not_of("0123456789") != std::string::npos) continue;
    out[std::stoull(digits)] = e.path().string();
  }
  return out;
}

std::size_t remove_unfinished_checkpoints(const std::string& dir, const std::string& job_id,
                                          const std::string& role, uint32_t rank) {
  std::size_t removed = 0;
  std::error_code ec;
  const std::string prefix = file_prefix(job_id, role, rank);
  const std::size_t stem = prefix.size() + 12 + 5;  // PREFIX<12 digits>.ckpt
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    // NAME.ckpt.tmp, or NAME.ckpt.tmp.PID.N where that was taken (open_temporary).
    if (name.size() < stem + 4 || name.rfind(prefix, 0) != 0 ||
        name.compare(stem - 5, 9, ".ckpt.tmp") != 0 ||
        (name.size() > stem + 4 && name[stem + 4] != '.') ||
        name.substr(prefix.size(), 12).find_first_not_of("0123456789") != std::string::npos) {
      continue;
    }
    std::error_code rm;
    if (e.is_regular_file(rm) && std::filesystem::remove(e.path(), rm)) ++removed;
  }
  return removed;
}

std::string remove_earlier_run(std::map<uint64_t, std::string>& files, const std::string& who,
                               const std::string& dir) {
  if (files.empty()) return "";
  keep_newest_checkpoints(files, 0);
  const std::string said = "fresh start: removed " + std::to_string(files.size()) +
                           " checkpoint(s) of " + who + " from " + dir;
  files.clear();
  return said;
}

void keep_newest_checkpoints(const std::map<uint64_t, std::string>& files, int keep,
                             uint64_t every) {
  // The newest kEveryKept multiples of `every` stay too: the points the other processes also
  // have. A server's writer runs up to three of them behind its training (one being written, one
  // queued, and the servers one iteration apart): keeping only the newest, a slow disk's server
  // had none of another's two (--resume found no common checkpoint).
  std::set<uint64_t> fixed;
  for (auto it = files.rbegin(); every > 0 && it != files.rend() && fixed.size() < kEveryKept;
       ++it) {
    if (it->first % every == 0) fixed.insert(it->first);
  }
  std::size_t drop = files.size() > std::size_t(keep) ? files.size() - std::size_t(keep) : 0;
  std::error_code ec;
  for (auto it = files.begin(); drop > 0; ++it, --drop) {
    if (!fixed.count(it->first)) std::filesystem::remove(it->second, ec);
  }
}

}  // namespace psrt
