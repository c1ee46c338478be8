// ZeroMQ CURVE for a job (security.curve): keys derived from the per-job secret, socket set-up,
// and the ZAP handler that admits only the job's client key. Every process derives the same four
// keys from the secret: the servers' pair (ROUTERs are CURVE servers) and the clients' pair (the
// DEALERs of workers and of servers other than 0). Without the secret a process can neither
// complete a handshake nor read a byte.
#pragma once

#include <zmq.hpp>

#include <cstdint>
#include <string>

namespace psrt {

struct SecurityConfig;

struct CurveKeys {  // Z85 text, 40 characters each
  std::string server_public, server_secret, client_public, client_secret;
};

// Deterministic: the same secret gives the same keys (BLAKE2b via libsodium's crypto_generichash,
// then crypto_box_seed_keypair). Throws ConfigError for a secret under 16 bytes.
CurveKeys derive_curve_keys(const std::string& secret);
// Reads security.secret_file and derives the keys; throws ConfigError naming the problem.
CurveKeys load_curve_keys(const SecurityConfig& security);

void set_curve_server(zmq::socket_t& socket, const CurveKeys& keys);
void set_curve_client(zmq::socket_t& socket, const CurveKeys& keys);

// The ZAP handler (RFC 27) of a context: a REP socket on inproc://zeromq.zap.01, bound before any
// CURVE server socket of that context accepts a connection. It lives in the I/O thread that owns
// the context's sockets: poll socket(), call handle() when it is readable.
class ZapHandler {
 public:
  ZapHandler(zmq::context_t& ctx, const CurveKeys& keys);
  zmq::socket_t& socket() { return socket_; }
  // Answers every waiting request; returns how many were refused.
  uint64_t handle();
  uint64_t refused() const { return refused_; }

 private:
  zmq::socket_t socket_;
  std::string admitted_;  // the client public key, 32 raw bytes
  uint64_t refused_ = 0;
};

}  // namespace psrt
