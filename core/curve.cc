#include "core/curve.h"

#include <sodium.h>
#include <spdlog/spdlog.h>
#include <zmq.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "core/config.h"
#include "core/status.h"

namespace psrt {

namespace {

using Key = std::array<uint8_t, 32>;

std::string z85(const Key& key) {
  char out[41];
  if (!zmq_z85_encode(out, key.data(), key.size())) throw std::runtime_error("zmq_z85_encode");
  return std::string(out, 40);
}

// A keypair from BLAKE2b(label, key = BLAKE2b(secret)).
void derive_pair(const Key& master, const char* label, std::string& pub, std::string& sec) {
  Key seed, pk, sk;
  crypto_generichash(seed.data(), seed.size(), reinterpret_cast<const uint8_t*>(label),
                     std::char_traits<char>::length(label), master.data(), master.size());
  crypto_box_seed_keypair(pk.data(), sk.data(), seed.data());
  pub = z85(pk);
  sec = z85(sk);
  sodium_memzero(sk.data(), sk.size());
  sodium_memzero(seed.data(), seed.size());
}

}  // namespace

CurveKeys derive_curve_keys(const std::string& secret) {
  if (secret.size() < 16) {
    throw ConfigError("security.secret_file: the secret has " + std::to_string(secret.size()) +
                      " bytes, at least 16 are needed (e.g. head -c 32 /dev/urandom > FILE)");
  }
  if (sodium_init() < 0) throw ConfigError("security.curve: libsodium does not initialise");
  Key master;
  crypto_generichash(master.data(), master.size(), reinterpret_cast<const uint8_t*>(secret.data()),
                     secret.size(), nullptr, 0);
  CurveKeys k;
  derive_pair(master, "psrt curve server key", k.server_public, k.server_secret);
  derive_pair(master, "psrt curve client key", k.client_public, k.client_secret);
  sodium_memzero(master.data(), master.size());
  return k;
}

CurveKeys load_curve_keys(const SecurityConfig& security) {
  if (!zmq_has("curve")) throw ConfigError("security.curve: this libzmq has no CURVE support");
  if (security.secret_file.empty()) {
    throw ConfigError("security.curve: true needs security.secret_file (psrt-launch writes one "
                      "for each job when none is given)");
  }
  std::error_code ec;
  const auto status = std::filesystem::status(security.secret_file, ec);
  if (!ec && std::filesystem::is_directory(status)) {
    throw ConfigError("security.secret_file: " + security.secret_file + " is a directory");
  }
  if (!ec && std::filesystem::exists(status) && !std::filesystem::is_regular_file(status)) {
    // A FIFO blocked the daemon in open() for ever.
    throw ConfigError("security.secret_file: " + security.secret_file +
                      " is not a regular file (a FIFO or a device?)");
  }
  using std::filesystem::perms;
  if (!ec && (status.permissions() & (perms::group_read | perms::others_read)) != perms::none) {
    spdlog::warn("security.secret_file {} is readable by other users (anyone who reads it can "
                 "join or impersonate this job's processes): chmod 600 it",
                 security.secret_file);
  }
  errno = 0;
  std::ifstream in(security.secret_file, std::ios::binary);
  if (!in) {
    throw ConfigError("security.secret_file: cannot read " + security.secret_file +
                      (errno != 0 ? std::string(": ") + std::strerror(errno) : std::string()));
  }
  std::string secret;
  char buf[4096];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    secret.append(buf, std::size_t(in.gcount()));
    if (secret.size() > (1 << 20)) throw ConfigError("security.secret_file: over 1 MiB");
  }
  return derive_curve_keys(secret);
}

void set_curve_server(zmq::socket_t& socket, const CurveKeys& keys) {
  socket.set(zmq::sockopt::curve_server, 1);
  socket.set(zmq::sockopt::curve_secretkey, keys.server_secret);
  socket.set(zmq::sockopt::zap_domain, "psrt");
}

void set_curve_client(zmq::socket_t& socket, const CurveKeys& keys) {
  socket.set(zmq::sockopt::curve_serverkey, keys.server_public);
  socket.set(zmq::sockopt::curve_publickey, keys.client_public);
  socket.set(zmq::sockopt::curve_secretkey, keys.client_secret);
}

ZapHandler::ZapHandler(zmq::context_t& ctx, const CurveKeys& keys)
    : socket_(ctx, zmq::socket_type::rep), admitted_(32, '\0') {
  zmq_z85_decode(reinterpret_cast<uint8_t*>(admitted_.data()), keys.client_public.c_str());
  socket_.set(zmq::sockopt::linger, 0);
  socket_.bind("inproc://zeromq.zap.01");
}

uint64_t ZapHandler::handle() {
  uint64_t refused = 0;
  while (true) {
    // Request: version, request id, domain, address, routing id, mechanism, credentials...
    std::vector<zmq::message_t> frames;
    zmq::message_t f;
    if (!socket_.recv(f, zmq::recv_flags::dontwait)) break;
    frames.push_back(std::move(f));
    while (frames.back().more()) {
      frames.emplace_back();
      (void)socket_.recv(frames.back(), zmq::recv_flags::none);
    }
    const bool ok = frames.size() >= 7 && frames[0].to_string_view() == "1.0" &&
                    frames[5].to_string_view() == "CURVE" &&
                    frames[6].to_string_view() == admitted_;
    if (!ok) ++refused;
    const std::string id = frames.size() > 1 ? frames[1].to_string() : std::string();
    socket_.send(zmq::buffer(std::string("1.0")), zmq::send_flags::sndmore);
    socket_.send(zmq::buffer(id), zmq::send_flags::sndmore);
    socket_.send(zmq::buffer(std::string(ok ? "200" : "400")), zmq::send_flags::sndmore);
    socket_.send(zmq::buffer(std::string(ok ? "OK" : "not this job's key")),
                 zmq::send_flags::sndmore);
    socket_.send(zmq::buffer(std::string(ok ? "psrt" : "")), zmq::send_flags::sndmore);
    socket_.send(zmq::const_buffer(nullptr, 0), zmq::send_flags::none);
  }
  refused_ += refused;
  return refused;
}

}  // namespace psrt
