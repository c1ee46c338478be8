// Issue 17, rows 2 and 3, with a real psrt-server on loopback: NaN gradients are refused, a
// client that floods and never reads keeps the server's memory and log bounded, replies never
// quote raw bytes, a registration too big for the server is refused before anything is allocated,
// and too many workers is a configuration error.
#include <catch2/catch.hpp>

#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "core/transport.h"
#include "tests/integration/raw_client.h"

using namespace psrt;
using namespace psrt::test;

namespace {

std::string job_yaml(const std::string& limits = "") {
  return "job: {id: limits, iterations: 1}\n"
         "cluster: {servers: 1, workers: 1, heartbeat_s: 0.2, peer_timeout_s: 60}\n"
         "optimizer: {type: sgd, lr: 0.5, momentum: 0}\n" +
         (limits.empty() ? std::string() : "limits: {" + limits + "}\n");
}

const Sender kW0{wire::WORKER, 0, "limits"};

void register_model(RawClient& w, const std::vector<uint64_t>& sizes) {
  wire::Header reg = w.header(wire::REGISTER);
  for (std::size_t k = 0; k < sizes.size(); ++k) {
    auto* t = reg.mutable_register_()->add_tensors();
    t->set_key(uint32_t(k));
    t->set_num_elements(sizes[k]);
  }
  w.send(reg);
}

// Registers one tensor of 10 elements, initialises it to 0.25 and passes the start barrier.
void start_one_tensor(RawClient& w) {
  register_model(w, {10});
  expect(w, wire::MEMBERSHIP);
  const std::vector<float> values(10, 0.25f);
  w.send(w.tensor(wire::INIT, 0, 0, 10, 0, &values), RawClient::frame_of(values));
  expect(w, wire::ACK);
  wire::Header b = w.header(wire::BARRIER);
  b.mutable_barrier()->set_name("start");
  w.send(b);
  expect(w, wire::BARRIER_RELEASE);
}

void shutdown(RawClient& w, ServerProc& s) {
  wire::Header b = w.header(wire::BARRIER);
  b.mutable_barrier()->set_name("shutdown");
  w.send(b);
  expect(w, wire::BARRIER_RELEASE);
  const auto rc = s.proc->wait_exit(30);
  INFO(s.proc->output());
  CHECK(rc == 0);
}

uint64_t rss_kb(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6));
  }
  return 0;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// DIR/job.yaml: 3 iterations of a replay `model` (its mapping's keys) on 1 server and `workers`
// workers under `scheduler` (its keys) and a mark of 100 messages.
std::string hwm_job(const std::string& dir, int workers, const std::string& model,
                    const std::string& scheduler) {
  write_file(dir + "/job.yaml",
             "job: {id: hwm, iterations: 3, log_every: 0}\n"
             "cluster: {servers: 1, workers: " + std::to_string(workers) +
             ", start_timeout_s: 30, heartbeat_s: 0.2, progress_timeout_s: 60}\n"
             "model: {backend: replay, " + model + "}\n"
             "optimizer: {type: sgd, lr: 0.01}\n"
             "scheduler: {" + scheduler + "}\n"
             "limits: {socket_hwm: 100}\n");
  return dir + "/job.yaml";
}

// Runs `cfg` on 1 server and `workers` workers and checks that every process ends well, nothing
// dropped at a full queue (the server's closing line counts its replies dropped).
void expect_clean_run(const std::string& cfg, int workers, double timeout_s, const char* what) {
  Daemons d = start_daemons(cfg, 1, workers);
  for (std::size_t i = 0; i < d.procs.size(); ++i) {
    const auto rc = d.procs[i]->wait_exit(timeout_s);
    INFO(what << ", " << d.names[i] << ":\n" << d.procs[i]->output());
    REQUIRE(rc.has_value());
    CHECK(*rc == 0);
    CHECK_THAT(d.procs[i]->output(), !Catch::Contains("limits.socket_hwm"));
  }
  CHECK_THAT(d.procs[0]->output(), Catch::Contains(" 0 replies dropped"));
}

}  // namespace

TEST_CASE("NaN and infinite gradients are refused unless the config allows them",
          "[integration][limits]") {
  const bool allow = GENERATE(false, true);
  ServerProc s(job_yaml(allow ? "allow_non_finite: true" : ""));
  zmq::context_t ctx(1);
  RawClient w(ctx, s.endpoint, "w0", kW0);
  start_one_tensor(w);
  std::vector<float> g(10, 0.5f);
  g[3] = std::numeric_limits<float>::quiet_NaN();
  g[7] = std::numeric_limits<float>::infinity();
  wire::Header h = w.tensor(wire::PUSH, 0, 0, 10, 0, &g);
  w.send(h, RawClient::frame_of(g));
  if (!allow) {
    CHECK_THAT(expect_error(w, ErrorCode::kNonFinite), Catch::Contains("2 of the 10"));
    g[3] = g[7] = 0.5f;  // the same push, finite: accepted, and exact
    h = w.tensor(wire::PUSH, 0, 0, 10, 0, &g);
    w.send(h, RawClient::frame_of(g));
  }
  const Reply p = expect_params_acking(w, h.seq());  // the one worker completes the chunk
  const auto values = floats_of(p.payload.at(0));
  CHECK(values[0] == 0.0f);  // 0.25 - 0.5 * 0.5
  CHECK(std::isnan(values[3]) == allow);
  shutdown(w, s);
}

TEST_CASE("a client that floods and never reads keeps the server bounded",
          "[integration][limits]") {
  ServerProc s(job_yaml());
  const int pid = s.proc->child().pid();
  zmq::context_t ctx(1);
  {
    RawClient w(ctx, s.endpoint, "w0", kW0);
    register_model(w, {10});
    expect(w, wire::MEMBERSHIP);
  }
  const uint64_t before = rss_kb(pid);
  {
    // A DEALER that reads nothing: what the server sends back piles up at its end.
    zmq::socket_t flood(ctx, zmq::socket_type::dealer);
    flood.set(zmq::sockopt::rcvhwm, 10);
    flood.set(zmq::sockopt::rcvbuf, 4096);
    flood.set(zmq::sockopt::linger, 0);
    flood.connect(s.endpoint);
    const std::string junk(64, 'x');
    for (int i = 0; i < 200000; ++i) flood.send(zmq::buffer(junk), zmq::send_flags::none);
    // The server has read them all once it answers a later client (one queue per peer, in order
    // of arrival is not promised across peers: ask until it has).
    RawClient probe(ctx, s.endpoint, "w0.probe", kW0);
    probe.send(probe.header(wire::HEARTBEAT));
    expect_error(probe, ErrorCode::kNotRegistered);
  }
  const uint64_t after = rss_kb(pid);
  INFO("server RSS " << before << " kB before, " << after << " kB after the flood");
  CHECK(after < before + 64 * 1024);
  // The log: a bounded number of lines, and the count of the rest.
  CHECK(s.proc->wait_line("more like it", 15));
  const std::string& out = s.proc->output();
  INFO(out.substr(0, 4000));
  CHECK(count(out, "rejected a message") < 500);
  CHECK_FALSE(s.proc->wait_exit(0.1));
}

// A worker that asks for a chunk's values again and again and never acknowledges the replies:
// once its reply credit is spent, each PULL queued another reply entry (140 bytes each, without
// bound). A dense reply already queued now stands for the rest.
TEST_CASE("a worker's flood of PULLs keeps the server's memory bounded", "[integration][limits]") {
  ServerProc s(job_yaml());
  const int pid = s.proc->child().pid();
  zmq::context_t ctx(1);
  RawClient w(ctx, s.endpoint, "w0", kW0);
  start_one_tensor(w);
  const uint64_t before = rss_kb(pid);
  for (int i = 0; i < 600000; ++i) {  // a blocking send: the flood outruns the server's reading
    w.socket().send(encode_header(w.tensor(wire::PULL, 0, 0, 10, 0)), zmq::send_flags::none);
  }
  w.send(w.tensor(wire::PULL, 99, 0, 10, 0));  // its ERROR reply comes once all were read
  std::size_t params = 0;
  bool answered = false;
  while (const std::optional<Reply> r = w.recv(60)) {
    if ((answered = r->header.type() == wire::ERROR)) break;
    ++params;
  }
  REQUIRE(answered);
  const uint64_t after = rss_kb(pid);
  INFO("server RSS " << before << " kB before, " << after << " kB after; " << params
                     << " replies read");
  CHECK(params > 0);
  CHECK(after < before + 32 * 1024);
  CHECK_FALSE(s.proc->wait_exit(0.1));
}

TEST_CASE("headers that are not valid proto3 flood neither the log nor the server",
          "[integration][limits]") {
  ServerProc s(job_yaml());
  zmq::context_t ctx(1);
  // A header whose job id (a proto3 string) is not UTF-8: libprotobuf refuses to parse it and
  // would print a line of its own for every one; the daemon counts them with its other rejects.
  RawClient w(ctx, s.endpoint, "w0", kW0);
  wire::Header bad = w.header(wire::HEARTBEAT);
  bad.set_job_id(std::string("sec\xff\xfe", 5));
  std::string bytes;
  REQUIRE(bad.SerializeToString(&bytes));  // the C++ writer does not check UTF-8
  for (int i = 0; i < 2000; ++i) {
    std::vector<zmq::message_t> frames;
    frames.emplace_back(bytes.data(), bytes.size());
    w.send_frames(std::move(frames));
  }
  RawClient probe(ctx, s.endpoint, "w0.probe", kW0);
  probe.send(probe.header(wire::HEARTBEAT));
  expect_error(probe, ErrorCode::kNotRegistered);
  CHECK_FALSE(s.proc->wait_exit(0.5));
  const std::string& out = s.proc->output();
  INFO(out.substr(0, 4000));
  CHECK(count(out, "UTF-8") < 20);
  CHECK(count(out, "rejected a message") < 500);
}

TEST_CASE("error replies quote neither raw identities nor the job id",
          "[integration][limits]") {
  ServerProc s(job_yaml());
  zmq::context_t ctx(1);
  // An identity of raw bytes that are not UTF-8: RawClient fails the test unless the reply parses
  // as proto3 (whose strings must be valid UTF-8).
  RawClient odd(ctx, s.endpoint, std::string("w0\xff\xfe\x01", 5), kW0);
  odd.send(odd.header(wire::HEARTBEAT));
  CHECK_THAT(expect_error(odd, ErrorCode::kNotRegistered), !Catch::Contains("\xff"));
  // A 1 MiB job id: refused, and not sent back.
  RawClient big(ctx, s.endpoint, "w0.big", {wire::WORKER, 0, std::string(1 << 20, 'j')});
  big.send(big.header(wire::HEARTBEAT));
  Envelope env;
  zmq::socket_t& sock = big.socket();
  zmq::pollitem_t item{sock.handle(), 0, ZMQ_POLLIN, 0};
  REQUIRE(zmq::poll(&item, 1, std::chrono::seconds(15)) == 1);
  REQUIRE(recv_envelope(sock, env, false));
  wire::Header h;
  REQUIRE(h.ParseFromArray(env.header.data(), int(env.header.size())));
  CHECK(h.type() == wire::ERROR);
  CHECK(h.error().code() == uint32_t(ErrorCode::kWrongJob));
  CHECK(env.header.size() < 1024);
  CHECK_FALSE(s.proc->wait_exit(0.1));
}

TEST_CASE("a registration too big for the server is refused before it allocates",
          "[integration][limits]") {
  ServerProc s(job_yaml("server_memory_bytes: 268435456"));  // 256 MiB
  zmq::context_t ctx(1);
  RawClient w(ctx, s.endpoint, "w0", kW0);
  SECTION("2 tensors of 2^26 elements: 512 MiB") { register_model(w, {1ull << 26, 1ull << 26}); }
  SECTION("2 tensors of 2^34 elements") { register_model(w, {1ull << 34, 1ull << 34}); }
  CHECK_THAT(expect_error(w, ErrorCode::kLimit), Catch::Contains("over the cap"));
  CHECK(rss_kb(s.proc->child().pid()) < 200 * 1024);
  // The server carries on: a model that fits trains.
  start_one_tensor(w);
  shutdown(w, s);
}

TEST_CASE("too many workers or servers is a configuration error", "[integration][limits]") {
  const std::string dir = temp_dir("limits");
  write_file(dir + "/job.yaml", "cluster: {workers: 65536}\n");
  Proc p("server", {bin("psrt-server"), "--config", dir + "/job.yaml"});
  const auto rc = p.wait_exit(30);
  INFO(p.output());
  CHECK(rc == 2);
  CHECK_THAT(p.output(), Catch::Contains("cluster.workers"));
}

// A server holding more chunks than limits.socket_hwm: worker 0's INIT of every chunk and each
// worker's first PULLs went out at once, the queue dropped what did not fit, and the job stalled
// at its start (VGG-16 at the README's 16 KiB chunks is 17,000 chunks per server). They are paced
// now (worker/start_pacer.h).
TEST_CASE("a job with more chunks per server than the socket high-water mark starts and ends",
          "[integration][limits]") {
  const std::string dir = temp_dir("hwm");
  write_file(dir + "/big.yaml",
             "name: big\nbatch_size: 8\ndevice_gflops: 1.0\nscale: 1.0\nlayers:\n"
             "  - {name: fc, kind: linear, forward_ms: 1, backward_ms: 1, tensors: "
             "[{name: fc.w, elements: 300000}]}\n");  // 293 chunks of 4 KiB
  const std::string cfg = hwm_job(dir, 2, "profile: '" + dir + "/big.yaml'",
                                  "mode: preemptive, chunk_bytes: 4096, credit_bytes: 65536");
  expect_clean_run(cfg, 2, 60, "preemptive");
}

// Many small tensors under a large credit, two workers: more messages in flight than the queue
// holds, both ways (the pushes and their acknowledgements, the replies of every chunk at once).
// ZeroMQ dropped what met the mark and nothing sent it again: a dropped push or PULL stalled the
// job until cluster.progress_timeout_s, a dropped reply too, blaming a healthy worker. What meets
// a full queue now waits in its sender (core/held_sends.h), and the job runs to its end.
TEST_CASE("a job with more messages in flight than the socket high-water mark runs to its end",
          "[integration][limits]") {
  const std::string dir = temp_dir("hwm");
  std::string profile = "name: small\nbatch_size: 8\ndevice_gflops: 1.0\nscale: 1.0\nlayers:\n"
                        "  - {name: fc, kind: linear, forward_ms: 1, backward_ms: 1, tensors: [";
  for (int t = 0; t < 3000; ++t) {
    profile += (t ? ", " : "") + std::string("{name: t") + std::to_string(t) + ", elements: 4}";
  }
  write_file(dir + "/small.yaml", profile + "]}\n");
  for (const char* mode : {"fifo", "preemptive"}) {
    const std::string cfg =
        hwm_job(dir, 2, "profile: '" + dir + "/small.yaml'",
                "mode: " + std::string(mode) +
                    ", chunk_bytes: 4096, credit_bytes: 65536, batch_bytes: 0");
    expect_clean_run(cfg, 2, 90, mode);
  }
}

// A credit far above what the mark holds: the messages in flight follow the credit, and a hold
// bounded at 64 MiB per peer failed the job mid-run (a worker's push past it is not sent again);
// the bound is now four times the credit where that is more.
TEST_CASE("a large byte credit over a low high-water mark runs to its end",
          "[integration][limits]") {
  const std::string dir = temp_dir("hwm");
  const std::string cfg =
      hwm_job(dir, 1, "profile: '" + source("bench/profiles/inception_v3.yaml") + "', scale: 1",
              "mode: fifo_chunked, chunk_bytes: 4096, credit_bytes: 1073741824, batch_bytes: 0");
  expect_clean_run(cfg, 1, 120, "fifo_chunked");
}

// A model of so many tensors that its registration or its membership is over what one message
// may carry: the receiver's ZeroMQ dropped the connection without a word (maxmsgsize), and the
// job waited until "worker 0 lost: nothing heard from it". Refused now, naming the sizes.
TEST_CASE("a model too large for one registration or membership message is refused naming it",
          "[integration][limits]") {
  const std::string dir = temp_dir("hwm");
  // 160000 names of 10 characters: the registration fits, the membership (tensors and chunks)
  // does not; 40000 names of 120 characters: the registration does not.
  for (const auto& [tensors, pad, message] : {std::tuple{160000, 3, "MEMBERSHIP of "},
                                              std::tuple{40000, 120, "REGISTER of "}}) {
    std::string profile = "name: many\nlayers:\n  - {name: l, kind: linear, forward_ms: 1, "
                          "backward_ms: 1, tensors: [";
    for (int t = 0; t < tensors; ++t) {
      profile += (t ? ", {name: t" : "{name: t") + std::string(std::size_t(pad), 'x') +
                 std::to_string(t) + ", elements: 4}";
    }
    write_file(dir + "/many.yaml", profile + "]}\n");
    write_file(dir + "/job.yaml", "job: {id: many, iterations: 2, log_every: 0}\n"
                                  "cluster: {servers: 1, workers: 1, start_timeout_s: 60}\n"
                                  "model: {backend: replay, profile: '" + dir + "/many.yaml'}\n");
    Proc launch("launch", {bin("psrt-launch"), dir + "/job.yaml"});
    const auto rc = launch.wait_exit(90);
    INFO(launch.output().substr(0, 3000));
    CHECK(rc == std::optional<int>(2));  // a refusal of the job's own model
    CHECK_THAT(launch.output(), Catch::Contains(message) &&
                                    Catch::Contains(" bytes one message may carry") &&
                                    !Catch::Contains("nothing heard from it"));
  }
}

// A worker that registered but never finished its start (a large model still sending its initial
// values): the coordinator's start deadline named it "never came", as if it had not registered.
TEST_CASE("a start deadline missed by a registered worker says it registered", "[integration]") {
  ServerProc s(job_yaml(), {"--set", "cluster.start_timeout_s=1"});
  zmq::context_t ctx(1);
  RawClient w(ctx, s.endpoint, "w0", kW0);
  register_model(w, {10});
  expect(w, wire::MEMBERSHIP);  // and then nothing: no INIT, no barrier
  const auto rc = s.proc->wait_exit(30);
  INFO(s.proc->output());
  CHECK(rc == 1);
  CHECK_THAT(s.proc->output(), Catch::Contains("never came: worker 0 (registered, but its start "
                                               "did not end"));
}
