// A fake server 1 beside a real server 0 and a real worker: it registers with the coordinator as
// server 1, serves its own chunks by hand, and then sends the worker what only server 0 may send:
// the values of server 0's chunk and the acknowledgement of pushes that went to server 0. The
// worker must ignore both, saying so, and carry on.
#include <catch2/catch.hpp>
#include <signal.h>

#include <map>
#include <set>
#include <string>
#include <thread>
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
// Server 0 and worker 0 real, server 1 played by the test: registered, past its barriers, with
// worker 0's INITs of its chunks acknowledged and its first PULLs in.
struct RogueJob {
  std::string dir = temp_dir("rogue");
  std::unique_ptr<Proc> server0, worker;
  zmq::context_t ctx;
  FakeServer fake{ctx};
  std::vector<wire::ChunkInfo> chunks;
  std::map<uint32_t, std::vector<float>> mine;  // by chunk index: server 1's values
  std::size_t owned = 0;
  uint64_t seq = 0;  // of server 1's replies

  std::unique_ptr<Proc> start(const std::string& program, const std::string& coordinator) {
    return std::make_unique<Proc>(program, std::vector<std::string>{
        bin(program), "--config", dir + "/job.yaml", "--rank", "0", "--set",
        "cluster.coordinator=" + coordinator});
  }

  // `started`: through worker 0's INITs and first PULLs to server 1 (else only to its start).
  explicit RogueJob(bool started = true) {
    write_file(dir + "/two.yaml", kProfile);
    write_file(dir + "/job.yaml", job_yaml(dir + "/two.yaml"));
    server0 = start("psrt-server", "tcp://127.0.0.1:0");
    REQUIRE(server0->wait_line("PSRT_LISTENING ", 30));
    const std::string& out = server0->output();
    const auto at = out.find("PSRT_LISTENING ") + 15;
    const std::string coordinator = out.substr(at, out.find('\n', at) - at);
    RawClient control(ctx, coordinator, process_identity(wire::SERVER, 1), kS1);
    wire::Header reg = control.header(wire::REGISTER);
    reg.mutable_register_()->set_address(fake.endpoint);
    control.send(reg);
    worker = start("psrt-worker", coordinator);
    // The membership, then server 1's barriers: the worker gets its membership and connects.
    const Reply m = expect(control, wire::MEMBERSHIP);
    chunks.assign(m.header.membership().chunks().begin(), m.header.membership().chunks().end());
    for (const char* barrier : {"membership", "start"}) {
      wire::Header b = control.header(wire::BARRIER);
      b.mutable_barrier()->set_name(barrier);
      control.send(b);
    }
    // Server 0's chunks come first, so a worker that waits for server 1 (its heartbeats say
    // which server it waits for: the first chunk missing) holds all of server 0's.
    for (const auto& c : chunks) owned += c.server() == 1;
    REQUIRE(owned > 0);
    REQUIRE(owned < chunks.size());
    if (!started) return;
    for (std::size_t i = 0; i + 1 < chunks.size(); ++i) {
      REQUIRE(chunks[i].server() <= chunks[i + 1].server());
    }
    for (std::size_t pulls = 0; pulls < owned;) {
      std::vector<zmq::message_t> payload;
      const wire::Header h = fake.next(&payload);
      if (h.type() == wire::INIT) take_init(h, payload);
      pulls += h.type() == wire::PULL;
    }
    REQUIRE(mine.size() == owned);
  }
  ~RogueJob() {
    ::kill(server0->child().pid(), SIGCONT);
    worker->kill(SIGKILL);
    server0->kill(SIGKILL);
  }

  // Server 1 closes its socket and listens again on the same port, as a reset connection would
  // look; the worker must then end at once naming the connection.
  void drop_connection() {
    fake.router.close();
    zmq::socket_t again(ctx, zmq::socket_type::router);
    again.set(zmq::sockopt::linger, 0);
    for (int tries = 0;; ++tries) {  // the closed socket lets go of its port in ZeroMQ's own time
      try {
        again.bind(fake.endpoint);
        break;
      } catch (const zmq::error_t&) {
        REQUIRE(tries < 100);
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }
    const auto rc = worker->wait_exit(20);
    INFO("worker output:\n" << worker->output());
    REQUIRE(rc.has_value());
    CHECK(*rc == 1);
    CHECK_THAT(worker->output(), Catch::Contains("the connection to server 1 dropped"));
  }

  void take_init(const wire::Header& h, std::vector<zmq::message_t>& payload) {
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
  // Server 1's PARAMS of chunk `i` for `iteration`, holding `values`, acknowledging `pushes`.
  void send_params(uint32_t i, uint64_t iteration, const std::vector<float>& values,
                   const std::vector<uint64_t>& pushes = {}) {
    std::vector<zmq::message_t> frame;
    frame.emplace_back(values.data(), values.size() * sizeof(float));
    wire::Header h = params_of(chunks[i], iteration, ++seq);
    for (uint64_t p : pushes) h.add_acks(p);
    fake.send(h, std::move(frame));
  }
  // Server 1's values of `iteration` (its own, unchanged), acknowledging `pushes`; then the
  // worker's pushes of the next iteration, and two heartbeats saying it waits for `waits`. (The
  // I/O thread sends what is queued in every pass: its pushes to server 0 are out by then.)
  void serve(uint64_t iteration, std::vector<uint64_t>& pushes, uint32_t waits) {
    for (const auto& [i, values] : mine) {
      send_params(i, iteration, values, pushes);
      pushes.clear();
    }
    while (pushes.size() < owned) {
      const wire::Header h = fake.next();
      if (h.type() == wire::PUSH) pushes.push_back(h.seq());
    }
    for (int said = 0; said < 2;) {
      const wire::Header h = fake.next(nullptr, true);
      said += h.type() == wire::HEARTBEAT && h.waits_for_server() == waits;
    }
  }
};

}  // namespace

TEST_CASE_METHOD(RogueJob,
                 "a worker ignores values and acknowledgements from a server that does not own "
                 "the chunk",
                 "[integration][malformed]") {
  std::vector<uint64_t> pushes;
  serve(0, pushes, 2);  // server 0 has answered iteration 1: nothing in flight to it
  REQUIRE(::kill(server0->child().pid(), SIGSTOP) == 0);
  serve(1, pushes, 1);  // the worker's pushes of iteration 1 wait at the stopped server 0

  // Server 0's chunk with values of server 1's making, and every push that is not server 1's
  // acknowledged by server 1.
  uint32_t theirs = 0;
  while (chunks[theirs].server() != 0) ++theirs;
  send_params(theirs, 2, std::vector<float>(chunks[theirs].length(), 1e30f));
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
}

// Values of iteration i answer the worker's push of i - 1: a stale or a future iteration was
// applied as the current one (a future one then stood in for values that never came).
TEST_CASE_METHOD(RogueJob, "a worker ignores values of an iteration it does not take next",
                 "[integration][malformed]") {
  std::vector<uint64_t> pushes;
  serve(0, pushes, 2);
  const uint32_t i = mine.begin()->first;
  const std::vector<float> junk(chunks[i].length(), 1e30f);
  send_params(i, 1000000, junk);  // the worker holds 0 and takes 1 next
  CHECK(worker->wait_line("of iteration 1000000 for chunk", 20));
  serve(1, pushes, 2);
  send_params(i, 1, junk);  // the worker holds 1 now
  CHECK(worker->wait_line("of iteration 1 for chunk", 20));
  INFO("worker output:\n" << worker->output());
  CHECK_THAT(worker->output(), Catch::Contains("this worker holds iteration 1 and takes 2 next"));
  CHECK_THAT(worker->output(), !Catch::Contains("job failed"));
}

// A server's ERROR reply ends the worker: it tells the coordinator why, so the job ends at once
// naming it, where server 0 waited out cluster.peer_timeout_s (120 s here) and called it lost.
TEST_CASE_METHOD(RogueJob, "a worker refused by a server ends the job at once, naming why",
                 "[integration][malformed]") {
  wire::Header err = make_header(kS1, wire::ERROR);
  err.set_key(chunks[mine.begin()->first].key());
  err.mutable_error()->set_code(uint32_t(ErrorCode::kBadSize));
  err.mutable_error()->set_about(wire::PUSH);
  err.mutable_error()->set_message("a refusal of the test's making");
  fake.send(err);
  const auto rc = worker->wait_exit(20);
  INFO("worker output:\n" << worker->output());
  REQUIRE(rc.has_value());
  CHECK(*rc == 1);
  CHECK(server0->wait_line("worker 0 gave up: server 1 rejected PUSH", 20));
}

// A connection that drops and comes back (ZeroMQ reconnects) has lost what was in flight on it:
// the worker waited, heartbeats flowing, until cluster.progress_timeout_s, and then blamed a
// healthy peer. It now gives up at once naming the connection. (Server 1 closes its socket and
// listens again on the same port, as a reset connection would look.)
TEST_CASE_METHOD(RogueJob, "a worker whose connection to a server drops ends the job naming it",
                 "[integration][lost]") {
  std::vector<uint64_t> pushes;
  serve(0, pushes, 2);
  drop_connection();
  CHECK(server0->wait_line("worker 0 gave up: the connection to server 1 dropped", 20));
}

// Before the worker has heard anything from server 1: the drop was ignored (it was gated on a
// reply having come), and the start waited until cluster.start_timeout_s, then blamed worker 0.
struct RogueStart : RogueJob {
  RogueStart() : RogueJob(false) {}
};

TEST_CASE_METHOD(RogueStart, "a connection that drops before the server's first reply ends the job",
                 "[integration][lost]") {
  (void)fake.next();  // worker 0's first INIT: its connection is up; no ACK comes
  drop_connection();
}

// A coordinator of another release (another protocol version) at the coordinator's address: every
// message was dropped as bad, and the worker ended blaming silence ("nothing answered there").
TEST_CASE("a worker whose coordinator speaks another protocol version says so",
          "[integration][lost]") {
  const std::string dir = temp_dir("rogue-version");
  write_file(dir + "/two.yaml", kProfile);
  write_file(dir + "/job.yaml", job_yaml(dir + "/two.yaml"));
  zmq::context_t ctx;
  FakeServer coordinator(ctx);
  Proc worker("worker", {bin("psrt-worker"), "--config", dir + "/job.yaml", "--set",
                         "cluster.coordinator=" + coordinator.endpoint});
  REQUIRE(coordinator.next().type() == wire::REGISTER);
  wire::Header refusal = make_header({wire::SERVER, 0, "rogue"}, wire::ERROR);
  refusal.set_version(refusal.version() + 1);
  coordinator.send(refusal);
  const auto rc = worker.wait_exit(30);
  INFO(worker.output());
  CHECK(rc == std::optional<int>(2));
  CHECK_THAT(worker.output(), Catch::Contains("speaks another protocol: protocol version"));
}
