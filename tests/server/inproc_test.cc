// A Server and PsClients in one process, over ZeroMQ's inproc:// transport in a shared context:
// the daemons' own classes on the one messaging layer (core/messenger.h), driven without spawning
// processes. The push / ACK / credit / reply cycle, the barriers, a lost peer and a malformed
// message.
#include <catch2/catch.hpp>

#include <atomic>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "core/config.h"
#include "core/model.h"
#include "core/status.h"
#include "core/transport.h"
#include "core/wire.h"
#include "server/server.h"
#include "worker/ps_client.h"

using namespace psrt;

namespace {

// Two tensors of 100 and 40 floats in 32-float chunks (6 chunks), SGD without momentum, and a
// credit of two chunks: an iteration's pushes (560 bytes) and replies only get through as the
// acknowledgements return the credit.
Config job(const std::string& name, int workers) {
  Config c;
  c.job.id = "inproc-" + name;
  c.cluster.coordinator = "inproc://psrt-test-" + name;
  c.cluster.workers = workers;
  c.cluster.heartbeat_s = 0.1;
  c.optimizer.type = "sgd";
  c.optimizer.lr = 0.5;
  c.optimizer.momentum = 0;
  c.scheduler.mode = Mode::kPreemptive;  // chunked: fifo would send whole tensors
  c.scheduler.chunk_bytes = 128;
  c.scheduler.credit_bytes = 256;
  return c;
}

ModelDesc two_tensors() {
  ModelDesc m;
  m.name = "two";
  LayerDesc a;
  a.name = "a";
  a.kind = "linear";
  m.add_layer(a, {{"a.weight", 100}});
  LayerDesc b;
  b.name = "b";
  b.kind = "linear";
  m.add_layer(b, {{"b.weight", 40}});
  return m;
}

// One worker's parameters, and a PsClient writing into them.
struct Worker {
  std::vector<std::vector<float>> params;
  std::unique_ptr<PsClient> client;

  Worker(const Config& c, uint32_t rank, const ModelDesc& m, zmq::context_t& ctx, float init) {
    for (const auto& t : m.tensors) {
      params.emplace_back(t.num_elements);
      for (std::size_t i = 0; i < params.back().size(); ++i)
        params.back()[i] = init + 0.01f * float(i);
    }
    client = std::make_unique<PsClient>(
        c, rank, m, [this](uint32_t key) { return std::span<float>(params.at(key)); }, nullptr,
        std::nullopt, &ctx);
  }
};

float grad(uint32_t worker, uint32_t key, std::size_t i, uint64_t iteration) {
  return 0.1f * float(worker + 1) + 0.001f * float(i) - 0.05f * float(key) +
         0.02f * float(iteration);
}

void push_iteration(Worker& w, uint32_t rank, const ModelDesc& m, uint64_t it) {
  // Backward order: the last layer's gradient first.
  for (auto t = m.tensors.rbegin(); t != m.tensors.rend(); ++t) {
    std::vector<float> g(t->num_elements);
    for (std::size_t i = 0; i < g.size(); ++i) g[i] = grad(rank, t->key, i, it);
    w.client->push(t->key, it, g);
  }
}

// The server's loop on a thread of its own; what ended it, if an error.
struct ServerThread {
  Server server;
  std::string error;
  std::thread thread;
  ServerThread(const Config& c, zmq::context_t& ctx) : server(c, 0, &ctx) {
    thread = std::thread([this] {
      try {
        server.run();
      } catch (const std::exception& e) {
        error = e.what();
      }
    });
  }
  void join() {
    if (thread.joinable()) thread.join();
  }
  ~ServerThread() { join(); }
};

}  // namespace

TEST_CASE("in process: pushes, ACKs and replies cycle under a small credit to the SGD result",
          "[inproc]") {
  zmq::context_t ctx(1);
  const Config c = job("cycle", 1);
  const ModelDesc m = two_tensors();
  ServerThread s(c, ctx);

  // A malformed message first: an ERROR comes back and the server carries on.
  zmq::socket_t raw = make_dealer(ctx, process_identity(wire::WORKER, 7));
  raw.connect(c.cluster.coordinator);
  raw.send(zmq::str_buffer("not a header"), zmq::send_flags::none);
  Envelope reply;
  zmq::pollitem_t item{raw.handle(), 0, ZMQ_POLLIN, 0};
  REQUIRE(zmq::poll(&item, 1, std::chrono::seconds(30)) == 1);
  REQUIRE(recv_envelope(raw, reply, false));
  wire::Header h;
  WireError err;
  REQUIRE(decode_header(reply.header, reply.payload, c.job.id, h, err));
  CHECK(h.type() == wire::ERROR);
  CHECK(h.error().code() == uint32_t(ErrorCode::kMalformed));

  Worker w(c, 0, m, ctx, 1.0f);
  const auto initial = w.params;
  w.client->start();
  const int iterations = 3;
  for (int it = 0; it < iterations; ++it) {
    w.client->wait_all(uint64_t(it));
    push_iteration(w, 0, m, uint64_t(it));
  }
  w.client->wait_all(iterations);
  for (const auto& t : m.tensors) {
    for (std::size_t i = 0; i < t.num_elements; ++i) {
      float expect = initial[t.key][i];
      for (int it = 0; it < iterations; ++it) expect -= 0.5f * grad(0, t.key, i, uint64_t(it));
      INFO("tensor " << t.key << " element " << i);
      CHECK(w.params[t.key][i] == Approx(expect).epsilon(1e-6));
    }
  }
  const ClientStats cs = w.client->stats();
  w.client->finish();
  s.join();
  CHECK(s.error.empty());
  const std::size_t chunks = w.client->shards().chunks().size();
  CHECK(chunks == 6);
  CHECK(cs.chunks_pushed == iterations * chunks);
  CHECK(cs.bytes_pushed == iterations * m.total_bytes());
  // The first values and one reply per pushed chunk.
  CHECK(cs.params_received == (iterations + 1) * chunks);
  CHECK(s.server.stats().pushes == iterations * chunks);
  CHECK(s.server.stats().updates == iterations * chunks);
  CHECK(s.server.stats().errors == 1);  // the malformed message
  CHECK(s.server.stats().dropped_replies == 0);
}

// The same cycle with adaptive batching (scheduler.batch_bytes 256: two 128-byte chunks per
// message) and without: the credit releases two chunks at a time, which then travel together, so
// fewer messages carry the same chunks to the same values, bit for bit.
TEST_CASE("in process: chunks released together travel as one batch, to the same values",
          "[inproc]") {
  const ModelDesc m = two_tensors();
  const int iterations = 3;
  struct Run {
    std::vector<std::vector<float>> params;
    ClientStats stats;
    ServerStats server;
  };
  auto run = [&](const std::string& name, uint64_t batch_bytes) {
    zmq::context_t ctx(1);
    Config c = job(name, 1);
    c.scheduler.batch_bytes = batch_bytes;
    ServerThread s(c, ctx);
    Worker w(c, 0, m, ctx, 1.0f);
    w.client->start();
    for (int it = 0; it < iterations; ++it) {
      w.client->wait_all(uint64_t(it));
      push_iteration(w, 0, m, uint64_t(it));
    }
    w.client->wait_all(iterations);
    Run r{w.params, w.client->stats(), {}};
    w.client->finish();
    s.join();
    CHECK(s.error.empty());
    r.server = s.server.stats();
    return r;
  };
  const Run alone = run("unbatched", 0);
  const Run batched = run("batched", 256);
  CHECK(batched.params == alone.params);
  CHECK(batched.stats.chunks_pushed == alone.stats.chunks_pushed);
  CHECK(batched.stats.params_received == alone.stats.params_received);
  CHECK(batched.server.pushes == alone.server.pushes);
  CHECK(batched.server.errors == 0);
  CAPTURE(batched.stats.messages_sent, alone.stats.messages_sent);
  CHECK(batched.stats.messages_sent < alone.stats.messages_sent);
  CHECK(batched.stats.messages_received < alone.stats.messages_received);
}

TEST_CASE("in process: the start barrier waits for worker 0's INIT, both workers end equal",
          "[inproc]") {
  zmq::context_t ctx(1);
  const Config c = job("barriers", 2);
  const ModelDesc m = two_tensors();
  ServerThread s(c, ctx);
  Worker w0(c, 0, m, ctx, 1.0f);
  Worker w1(c, 1, m, ctx, -3.0f);  // its own values are never used: worker 0 initialises
  const auto initial = w0.params;
  w0.client->start();
  w1.client->start();
  w1.client->wait_all(0);
  CHECK(w1.params == initial);
  for (uint64_t it = 0; it < 2; ++it) {
    w0.client->wait_all(it);
    w1.client->wait_all(it);
    push_iteration(w0, 0, m, it);
    push_iteration(w1, 1, m, it);
  }
  w0.client->wait_all(2);
  w1.client->wait_all(2);
  CHECK(w0.params == w1.params);
  const float mean0 = (grad(0, 0, 0, 0) + grad(1, 0, 0, 0)) / 2;
  const float mean1 = (grad(0, 0, 0, 1) + grad(1, 0, 0, 1)) / 2;
  CHECK(w0.params[0][0] == Approx(initial[0][0] - 0.5f * mean0 - 0.5f * mean1).epsilon(1e-6));
  // finish() returns once every worker has arrived at the shutdown barrier.
  std::thread other([&] { w1.client->finish(); });
  w0.client->finish();
  other.join();
  s.join();  // the shutdown barrier released the server
  CHECK(s.error.empty());
}

namespace {

// A job of 2 workers in which worker 1 goes once both have started, after `going` ran on its
// client: the errors worker 0 (pushing iteration 0, waiting for 1) and the server end with.
std::pair<std::string, std::string> worker_1_goes(const std::string& name, double peer_timeout_s,
                                                  const std::function<void(PsClient&)>& going) {
  zmq::context_t ctx(1);
  Config c = job(name, 2);
  c.cluster.peer_timeout_s = peer_timeout_s;
  const ModelDesc m = two_tensors();
  ServerThread s(c, ctx);
  Worker w0(c, 0, m, ctx, 1.0f);
  auto w1 = std::make_unique<Worker>(c, 1, m, ctx, 1.0f);
  w0.client->start();
  w1->client->start();
  w0.client->wait_all(0);
  going(*w1->client);
  w1.reset();
  std::string seen;
  try {  // the job may end before the push, or while worker 0 waits for iteration 1's values
    push_iteration(w0, 0, m, 0);
    w0.client->wait_all(1);
  } catch (const JobError& e) {
    seen = e.what();
  }
  s.join();
  return {seen, s.error};
}

}  // namespace

TEST_CASE("in process: a worker that goes silent is lost, the job ends naming it", "[inproc]") {
  // Worker 1 stops: its I/O thread ends without a word, its heartbeats stop.
  const auto [worker, server] = worker_1_goes("lost", 1.0, [](PsClient&) {});
  CHECK_THAT(worker, Catch::Contains("worker 1 lost"));
  CHECK_THAT(server, Catch::Contains("worker 1 lost"));
}

// A worker that fails for a cause of its own (its device, memory, a diverged loss) says why before
// it goes (PsClient::abandon): the job ends at once naming the cause, where the silence alone
// would take cluster.peer_timeout_s (a minute here) and name no cause.
TEST_CASE("in process: a worker that fails on its own says why, the job ends naming it",
          "[inproc]") {
  const auto [worker, server] = worker_1_goes(
      "abandon", 60, [](PsClient& c) { c.abandon("device 3 fell off the bus"); });
  CHECK_THAT(worker, Catch::Contains("worker 1 gave up: device 3 fell off the bus"));
  CHECK_THAT(server, Catch::Contains("worker 1 gave up: device 3 fell off the bus"));
}
