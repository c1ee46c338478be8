// security.curve with a real psrt-server: only a client holding the job's key gets an answer; a
// plain client and a CURVE client with a key of its own are refused during the handshake (the
// ZAP handler counts and logs them), and the server carries on serving the job's workers.
#include <catch2/catch.hpp>

#include "core/curve.h"
#include "tests/integration/raw_client.h"

using namespace psrt;
using namespace psrt::test;

namespace {

const Sender kW0{wire::WORKER, 0, "curvejob"};

void send_register(RawClient& w) {
  wire::Header reg = w.header(wire::REGISTER);
  auto* t = reg.mutable_register_()->add_tensors();
  t->set_key(0);
  t->set_num_elements(10);
  w.send(reg);
}

}  // namespace

TEST_CASE("with security.curve only the job's key is admitted", "[integration][security]") {
  const std::string dir = temp_dir("curve");
  const std::string secret = "a per-job secret of the curve test, 43 bytes";
  write_file(dir + "/job.secret", secret);
  ServerProc s("job: {id: curvejob, iterations: 1}\n"
               "cluster: {servers: 1, workers: 1, heartbeat_s: 0.2, peer_timeout_s: 60}\n"
               "security: {curve: true, secret_file: '" + dir + "/job.secret'}\n");
  zmq::context_t ctx(1);
  const CurveKeys job = derive_curve_keys(secret);
  CurveKeys own = derive_curve_keys("another secret, of another job");
  own.server_public = job.server_public;  // it knows where to connect, not the job's client key

  RawClient plain(ctx, s.endpoint, "w0", kW0);
  send_register(plain);
  RawClient impostor(ctx, s.endpoint, "w0.impostor", kW0, {1000, &own});
  send_register(impostor);
  // Another secret altogether: the handshake itself fails, before the ZAP handler is asked; the
  // server said nothing of it (and of `plain`, without CURVE), only the client timed out.
  CurveKeys other = derive_curve_keys("yet another secret, of yet another job");
  RawClient stranger(ctx, s.endpoint, "w0.stranger", kW0, {1000, &other});
  send_register(stranger);
  {
    INFO(s.proc->output());
    CHECK(s.proc->wait_line("refused a connection that does not hold this job's CURVE key", 15));
    CHECK(s.proc->wait_line("a connection failed the CURVE handshake", 15));
  }
  CHECK_FALSE(stranger.recv(0.1));
  CHECK_FALSE(impostor.recv(0.5));
  CHECK_FALSE(plain.recv(0.1));

  RawClient worker(ctx, s.endpoint, "w0", kW0, {1000, &job});
  send_register(worker);
  const Reply m = expect(worker, wire::MEMBERSHIP);
  CHECK(m.header.membership().num_workers() == 1);
  CHECK_FALSE(s.proc->wait_exit(0.1));
}

TEST_CASE("psrt-launch runs a job with security.curve, making the secret itself",
          "[integration][security]") {
  const std::string dir = temp_dir("curve-launch");
  write_file(dir + "/job.yaml",
             "job: {id: curvelaunch, iterations: 20, log_every: 0}\n"
             "cluster: {servers: 2, workers: 2}\n"
             "model: {backend: replay, profile: '" +
                 source("tests/integration/data/tiny_profile.yaml") +
                 "'}\n"
                 "scheduler: {mode: preemptive, chunk_bytes: 4096}\n"
                 "security: {curve: true}\n");
  Proc launch("launch", {bin("psrt-launch"), dir + "/job.yaml"});
  const auto rc = launch.wait_exit(60);
  INFO(launch.output());
  CHECK(rc == 0);
  CHECK_THAT(launch.output(), Catch::Contains("every process finished"));
  CHECK_THAT(launch.output(), Catch::Contains("iterations=20"));
}
