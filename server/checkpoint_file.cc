#include "server/checkpoint_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace psrt {

namespace {

constexpr char kMagic[8] = {'P', 'S', 'R', 'T', 'C', 'K', 'P', 'T'};

class Writer {
 public:
  template <typename T>
  void put(T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    out_.insert(out_.end(), p, p + sizeof v);
  }
  void bytes(const void* p, std::size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    out_.insert(out_.end(), b, b + n);
  }
  void floats(const std::vector<float>& v) {
    put<uint64_t>(v.size());
    bytes(v.data(), v.size() * sizeof(float));
  }
  std::vector<uint8_t> take() { return std::move(out_); }
  std::vector<uint8_t>& out() { return out_; }

 private:
  std::vector<uint8_t> out_;
};

// Reads within [data, data + size); a read past the end sets `short_` and yields zeros.
class Reader {
 public:
  Reader(const uint8_t* data, std::size_t size) : p_(data), left_(size) {}
  template <typename T>
  T get() {
    T v{};
    if (take(&v, sizeof v)) return v;
    return T{};
  }
  bool take(void* dst, std::size_t n) {
    if (n == 0) return true;  // dst may be an empty vector's null data() (found by fuzz_checkpoint)
    if (n > left_) {
      short_ = true;
      left_ = 0;
      return false;
    }
    std::memcpy(dst, p_, n);
    p_ += n;
    left_ -= n;
    return true;
  }
  // A float array of at most `max` elements (checked against the bytes left before allocating).
  bool floats(std::vector<float>& v, uint64_t max) {
    const auto n = get<uint64_t>();
    if (short_ || n > max || n > left_ / sizeof(float)) {
      short_ = true;
      return false;
    }
    v.resize(n);
    return take(v.data(), n * sizeof(float));
  }
  bool failed() const { return short_; }
  std::size_t left() const { return left_; }

 private:
  const uint8_t* p_;
  std::size_t left_;
  bool short_ = false;
};

uint32_t crc_of(const uint8_t* p, std::size_t n) {
  uLong crc = crc32(0L, Z_NULL, 0);
  while (n > 0) {
    const auto step = static_cast<uInt>(std::min<std::size_t>(n, 1u << 30));
    crc = crc32(crc, p, step);
    p += step;
    n -= step;
  }
  return uint32_t(crc);
}

Status sys_error(const std::string& what, const std::string& path) {
  return Status::error("checkpoint " + path + ": " + what + ": " + std::strerror(errno));
}

std::string file_prefix(const std::string& job_id, uint32_t rank) {
  std::string job = job_id;
  for (char& ch : job) {
    const bool plain = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                       (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-';
    if (!plain) ch = '_';
  }
  return job + "-server-" + std::to_string(rank) + "-";
}

}  // namespace

std::string checkpoint_path(const std::string& dir, const std::string& job_id, uint32_t rank,
                            uint64_t iteration) {
  char digits[32];
  std::snprintf(digits, sizeof digits, "%012llu.ckpt", (unsigned long long)iteration);
  return (std::filesystem::path(dir) / (file_prefix(job_id, rank) + digits)).string();
}

std::map<uint64_t, std::string> list_checkpoints(const std::string& dir, const std::string& job_id,
                                                 uint32_t rank) {
  std::map<uint64_t, std::string> out;
  std::error_code ec;
  const std::string prefix = file_prefix(job_id, rank);
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

std::vector<uint8_t> encode_checkpoint(const ShardSnapshot& s) {
  Writer w;
  w.bytes(kMagic, sizeof kMagic);
  w.put<uint32_t>(kCheckpointVersion);
  w.put<uint32_t>(uint32_t(s.job_id.size()));
  w.bytes(s.job_id.data(), s.job_id.size());
  w.put<uint32_t>(s.rank);
  w.put<uint32_t>(s.servers);
  w.put<uint32_t>(s.workers);
  w.put<uint64_t>(s.iteration);
  w.put<uint32_t>(uint32_t(s.chunks.size()));
  for (const auto& c : s.chunks) {
    w.put<uint32_t>(c.key);
    w.put<uint64_t>(c.offset);
    w.put<uint64_t>(c.length);
    w.put<uint64_t>(c.iteration);
    w.put<uint64_t>(c.opt.step);
    w.floats(c.params);
    w.floats(c.opt.m);
    w.floats(c.opt.v);
    w.floats(c.published);
  }
  w.put<uint32_t>(crc_of(w.out().data(), w.out().size()));
  return w.take();
}

Result<ShardSnapshot> decode_checkpoint(const std::vector<uint8_t>& bytes, const std::string& path) {
  auto bad = [&](const std::string& why) {
    return Status::error("checkpoint " + path + " rejected: " + why);
  };
  if (bytes.size() < sizeof kMagic + 8 || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) {
    return bad("not a psrt checkpoint (no PSRTCKPT header)");
  }
  Reader r(bytes.data() + sizeof kMagic, bytes.size() - sizeof kMagic - 4);
  const auto version = r.get<uint32_t>();
  if (version != kCheckpointVersion) {
    return bad("format version " + std::to_string(version) + ", this build reads version " +
               std::to_string(kCheckpointVersion));
  }
  uint32_t stored_crc = 0;
  std::memcpy(&stored_crc, bytes.data() + bytes.size() - 4, 4);
  if (crc_of(bytes.data(), bytes.size() - 4) != stored_crc) {
    return bad("checksum mismatch (truncated or corrupt)");
  }
  ShardSnapshot s;
  const auto id_len = r.get<uint32_t>();
  if (id_len > r.left()) return bad("truncated job id");
  s.job_id.resize(id_len);
  r.take(s.job_id.data(), id_len);
  s.rank = r.get<uint32_t>();
  s.servers = r.get<uint32_t>();
  s.workers = r.get<uint32_t>();
  s.iteration = r.get<uint64_t>();
  const auto n = r.get<uint32_t>();
  // Each chunk takes at least 68 bytes: a count the file cannot hold is rejected unallocated.
  if (r.failed() || n > r.left() / 68) return bad("chunk count " + std::to_string(n) + " does not fit");
  s.chunks.resize(n);
  for (auto& c : s.chunks) {
    c.key = r.get<uint32_t>();
    c.offset = r.get<uint64_t>();
    c.length = r.get<uint64_t>();
    c.iteration = r.get<uint64_t>();
    c.opt.step = r.get<uint64_t>();
    if (!r.floats(c.params, c.length) || !r.floats(c.opt.m, c.length) ||
        !r.floats(c.opt.v, c.length) || !r.floats(c.published, c.length)) {
      return bad("chunk (" + std::to_string(c.key) + ", " + std::to_string(c.offset) +
                 ") does not fit the file");
    }
    if (c.params.size() != c.length) return bad("chunk parameters are not the chunk's length");
  }
  if (r.failed() || r.left() != 0) return bad("its contents do not match its length");
  return s;
}

Status write_checkpoint(const std::string& path, const ShardSnapshot& s) {
  const std::vector<uint8_t> bytes = encode_checkpoint(s);
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return sys_error("cannot create " + tmp, path);
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      Status st = sys_error("write", path);
      ::close(fd);
      ::unlink(tmp.c_str());
      return st;
    }
    done += std::size_t(n);
  }
  if (::fsync(fd) != 0) {
    Status st = sys_error("fsync", path);
    ::close(fd);
    ::unlink(tmp.c_str());
    return st;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    Status st = sys_error("rename", path);
    ::unlink(tmp.c_str());
    return st;
  }
  // The rename is durable once the folder is.
  const std::string dir = std::filesystem::path(path).parent_path().string();
  const int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return sys_error("cannot open its folder", path);
  const int rc = ::fsync(dfd);
  ::close(dfd);
  return rc == 0 ? Status::ok() : sys_error("fsync of its folder", path);
}

Result<ShardSnapshot> read_checkpoint(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return Status::error("checkpoint " + path + " rejected: not a regular file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::error("checkpoint " + path + ": cannot open");
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return Status::error("checkpoint " + path + ": read error");
  return decode_checkpoint(bytes, path);
}

}  // namespace psrt
