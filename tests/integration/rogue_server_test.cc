// A fake server 1 beside a real server 0 and a real worker: it registers with the coordinator as
// server 1, serves its own chunks by hand, and then sends the worker what only server 0 may send:
// the values of server 0's chunk and the acknowledgement of pushes that went to server 0. The
// worker must ignore both, saying so, and carry on.
#include <catch2/catch.hpp>
#include <signal.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/transport.h"
#include "core/wire.h"
#include "tests/integration/raw_client.h"

using namespace psrt;
using namespace psrt::test;

namespace {

const Sender kS1{wire::SERVER, 1, "rogue"};

// Two layers of one tensor each: server 0 holds the first, server 1 the second.
constexpr const char* kProfile =
    "name: two\nbatch_size: 8\ndevice_gflops: 1.0\nscale: 1.0\nlayers:\n"
    "  - {name: a, kind: linear, forward_ms: 1, backward_ms: 1, tensors: [{name: a.w, "
    "elements: 1000}]}\n"
    "  - {name: b, kind: linear, forward_ms: 1, backward_ms: 1, tensors: [{name: b.w, "
    "elements: 1000}]}\n";

std::string job_yaml(const std::string& profile) {
  return "job: {id: rogue, iterations: 1000, log_every: 0}\n"
         "cluster: {servers: 2, workers: 1, start_timeout_s: 60, heartbeat_s: 0.2, "
         "peer_timeout_s: 120}\n"
         "model: {backend: replay, profile: '" + profile + "'}\n"
         "optimizer: {type: sgd, lr: 0.01}\n"
         "scheduler: {mode: fifo, credit_bytes: 1048576}\n";
}

// Server 1's listening side: a ROUTER the worker connects to.
struct FakeServer {
  explicit FakeServer(zmq::context_t& ctx) : router(ctx, zmq::socket_type::router) {
    router.set(zmq::sockopt::linger, 0);
    router.bind("tcp://127.0.0.1:0");
    endpoint = router.get(zmq::sockopt::last_endpoint);
  }
  // The next message from the worker that is not a heartbeat (its identity kept); with
  // `heartbeats`, heartbeats too.
  wire::Header next(std::vector<zmq::message_t>* payload = nullptr, bool heartbeats = false,
                    double seconds = 20) {
    Envelope env;
    zmq::pollitem_t item{router.handle(), 0, ZMQ_POLLIN, 0};
    while (zmq::poll(&item, 1, std::chrono::milliseconds(int(seconds * 1000))) > 0) {
      if (!recv_envelope(router, env, true)) continue;
      wire::Header h;
      WireError err;
      REQUIRE(decode_header(env.header, env.payload, kS1.job_id, h, err));
      worker = env.identity;
      if (h.type() == wire::HEARTBEAT && !heartbeats) continue;
      if (h.seq() > 0) seqs.insert(h.seq());
      if (payload) *payload = std::move(env.payload);
      return h;
    }
    FAIL("the worker sent server 1 nothing within " << seconds << " s");
    return {};
  }
  void send(const wire::Header& h, std::vector<zmq::message_t> payload = {}) {
    REQUIRE(send_envelope(router, &worker, h, std::move(payload)));
  }
  zmq::socket_t router;
  std::string endpoint, worker;
  std::set<uint64_t> seqs;  // of every message the worker sent here
};

wire::Header params_of(const wire::ChunkInfo& c, uint64_t iteration, uint64_t seq) {
  wire::Header h = make_header(kS1, wire::PARAMS);
  h.set_key(c.key());
  h.set_offset(c.offset());
  h.set_length(c.length());
  h.set_iteration(iteration);
  h.set_codec(wire::CODEC_NONE);
  h.set_num_elements(c.length());
  h.set_payload_bytes(c.length() * sizeof(float));
  h.set_seq(seq);
  return h;
}

}  // namespace

TEST_CASE("a worker ignores values and acknowledgements from a server that does not own the chunk",
          "[integration][malformed]") {
  const std::string dir = temp_dir("rogue");
  write_file(dir + "/two.yaml", kProfile);
  write_file(dir + "/job.yaml", job_yaml(dir + "/two.yaml"));
  auto start = [&](const std::string& program, const std::string& coordinator) {
    return std::make_unique<Proc>(program, std::vector<std::string>{
        bin(program), "--config", dir + "/job.yaml", "--rank", "0", "--set",
        "cluster.coordinator=" + coordinator});
  };
  auto server0 = start("psrt-server", "tcp://127.0.0.1:0");
  REQUIRE(server0->wait_line("PSRT_LISTENING ", 30));
  const std::string& out = server0->output();
  const auto at = out.find("PSRT_LISTENING ") + 15;
  const std::string coordinator = out.substr(at, out.find('\n', at) - at);

  zmq::context_t ctx;
  FakeServer fake(ctx);
  RawClient control(ctx, coordinator, process_identity(wire::SERVER, 1), kS1);
  wire::Header reg = control.header(wire::REGISTER);
  reg.mutable_register_()->set_address(fake.endpoint);
  control.send(reg);
  auto worker = start("psrt-worker", coordinator);

  // The membership, then server 1's barriers: the worker gets its membership and connects.
  const Reply m = expect(control, wire::MEMBERSHIP);
  std::map<uint32_t, std::vector<float>> mine;  // by chunk index: server 1's values
  std::vector<wire::ChunkInfo> chunks(m.header.membership().chunks().begin(),
                                      m.header.membership().chunks().end());
  for (const char* barrier : {"membership", "start"}) {
    wire::Header b = control.header(wire::BARRIER);
    b.mutable_barrier()->set_name(barrier);
    control.send(b);
  }
  // Server 0's chunks come first, so a worker that waits for server 1 (its heartbeats say which
  // server it waits for: the first chunk missing) holds all of server 0's.
  std::size_t owned = 0;
  for (const auto& c : chunks) owned += c.server() == 1;
  REQUIRE(owned > 0);
  REQUIRE(owned < chunks.size());
  for (std::size_t i = 0; i + 1 < chunks.size(); ++i) REQUIRE(chunks[i].server() <= chunks[i + 1].server());
  // Worker 0's INIT of server 1's chunks, acknowledged, and its PULLs of iteration 0.
  for (std::size_t pulls = 0; pulls < owned;) {
    std::vector<zmq::message_t> payload;
    const wire::Header h = fake.next(&payload);
    if (h.type() == wire::INIT) {
      wire::Header ack = make_header(kS1, wire::ACK);
      ack.set_key(h.key());
      ack.set_offset(h.offset());
      ack.set_length(h.length());
      ack.set_seq(h.seq());
      fake.send(ack);
      for (uint32_t i = 0; i < chunks.size(); ++i) {
        if (chunks[i].key() == h.key() && chunks[i].offset() == h.offset()) {
          mine[i] = floats_of(payload.at(0));
        }
      }
    }
    pulls += h.type() == wire::PULL;
  }
  REQUIRE(mine.size() == owned);
  // Server 1's values of `iteration` (its own, unchanged), acknowledging `pushes`; then the
  // worker's pushes of the next iteration, and two heartbeats saying it waits for `waits`. (The
  // I/O thread sends what is queued in every pass: its pushes to server 0 are out by then.)
  uint64_t seq = 0;
  auto serve = [&](uint64_t iteration, std::vector<uint64_t>& pushes, uint32_t waits) {
    for (const auto& [i, values] : mine) {
      std::vector<zmq::message_t> frame;
      frame.emplace_back(values.data(), values.size() * sizeof(float));
      wire::Header h = params_of(chunks[i], iteration, ++seq);
      for (uint64_t p : pushes) h.add_acks(p);
      pushes.clear();
      fake.send(h, std::move(frame));
    }
    while (pushes.size() < owned) {
      const wire::Header h = fake.next();
      if (h.type() == wire::PUSH) pushes.push_back(h.seq());
    }
    for (int said = 0; said < 2;) {
      const wire::Header h = fake.next(nullptr, true);
      said += h.type() == wire::HEARTBEAT && h.waits_for_server() == waits;
    }
  };
  std::vector<uint64_t> pushes;
  serve(0, pushes, 2);  // server 0 has answered iteration 1: nothing in flight to it
  REQUIRE(::kill(server0->child().pid(), SIGSTOP) == 0);
  serve(1, pushes, 1);  // the worker's pushes of iteration 1 wait at the stopped server 0

  // Server 0's chunk with values of server 1's making, and every push that is not server 1's
  // acknowledged by server 1.
  uint32_t theirs = 0;
  while (chunks[theirs].server() != 0) ++theirs;
  std::vector<float> junk(chunks[theirs].length(), 1e30f);
  std::vector<zmq::message_t> frame;
  frame.emplace_back(junk.data(), junk.size() * sizeof(float));
  fake.send(params_of(chunks[theirs], 2, ++seq), std::move(frame));
  wire::Header ack = make_header(kS1, wire::ACK);
  ack.set_key(chunks[theirs].key());
  ack.set_offset(chunks[theirs].offset());
  ack.set_length(chunks[theirs].length());
  for (uint64_t s = 1; s <= *fake.seqs.rbegin() + 16; ++s) {
    if (!fake.seqs.count(s)) ack.add_acks(s);
  }
  ack.set_seq(ack.acks(0));

  fake.send(ack);

  const bool params = worker->wait_line("ignored PARAMS from server 1 for a chunk of server 0", 20);
  const bool acks = worker->wait_line("ignored server 1's acknowledgement of push", 20);
  INFO("worker output:\n" << worker->output());
  CHECK(params);
  CHECK(acks);
  CHECK_THAT(worker->output(), !Catch::Contains("job failed"));

  ::kill(server0->child().pid(), SIGCONT);
  worker->kill(SIGKILL);
  server0->kill(SIGKILL);
}
