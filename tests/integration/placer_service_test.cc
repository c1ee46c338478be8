// A real psrt-placer on loopback gets garbage, a wrong protocol version, the wrong message type,
// a cyclic graph, an oversized graph, bad devices and a model that cannot fit: each gets an ERROR
// reply saying what was wrong, and the daemon still answers a good request afterwards, with the
// same plan as the library in-process. psrt-place asks it and writes a plan psrt-sim prices.
#include <catch2/catch.hpp>

#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/plan_yaml.h"
#include "core/profile.h"
#include "placement/placer.h"
#include "placement/service/client.h"
#include "placement/service/request.h"
#include "tests/integration/raw_client.h"

using namespace psrt;
using namespace psrt::test;

namespace {

const Sender kTool{wire::TOOL, 1, "placejob"};

placement::Request chain_request(uint32_t layers, uint64_t memory) {
  placement::Request r;
  r.model.name = "chain";
  for (uint32_t i = 0; i < layers; ++i) {
    LayerDesc l;
    l.name = "l";
    l.name += std::to_string(i);
    l.forward_ms = 1 + i % 3;
    l.backward_ms = 2 * l.forward_ms;
    l.activation_elements = 1000;
    r.model.add_layer(l, {{l.name + ".w", 10000}});
  }
  for (int d = 0; d < 2; ++d) r.devices.devices.push_back({d ? "b" : "a", memory, 1});
  r.setup.batch_size = 8;
  r.setup.micro_batches = 2;
  return r;
}

wire::Header request_header(RawClient& w, const wire::PlaceRequest& req) {
  wire::Header h = w.header(wire::PLACE_REQUEST);
  *h.mutable_place_request() = req;
  return h;
}

std::string endpoint_of(const Proc& p) {
  const auto& out = p.output();
  const auto at = out.find("PSRT_LISTENING ") + 15;
  return out.substr(at, out.find('\n', at) - at);
}

// Every kind of bad request the placer must answer with an ERROR (and live on): garbage, a
// foreign version, a message that is not a request, and requests the library refuses.
void send_bad_requests(RawClient& w, const wire::PlaceRequest& good) {
  std::vector<zmq::message_t> garbage;
  garbage.emplace_back("\xff\x01garbage", 9);
  w.send_frames(std::move(garbage));
  CHECK_THAT(expect_error(w, ErrorCode::kMalformed), Catch::Contains("parse"));

  auto h = request_header(w, good);
  h.set_version(99);
  w.send(h);
  expect_error(w, ErrorCode::kVersion);

  w.send(w.header(wire::BARRIER));
  CHECK_THAT(expect_error(w, ErrorCode::kUnexpected), Catch::Contains("PLACE_REQUEST"));

  auto cyclic = good;
  cyclic.mutable_layers(0)->add_inputs(5);  // l0 <- l5 <- ... <- l0
  w.send(request_header(w, cyclic));
  CHECK_THAT(expect_error(w, ErrorCode::kMalformed), Catch::Contains("cycle"));

  auto unknown = good;
  unknown.mutable_layers(3)->add_inputs(77);
  w.send(request_header(w, unknown));
  CHECK_THAT(expect_error(w, ErrorCode::kMalformed), Catch::Contains("does not exist"));

  const auto huge = placement::to_message(chain_request(placement::kMaxRequestLayers + 1, 1 << 30));
  w.send(request_header(w, huge));
  CHECK_THAT(expect_error(w, ErrorCode::kMalformed), Catch::Contains("at most"));

  auto no_memory = good;
  no_memory.mutable_devices(1)->set_memory_bytes(0);
  w.send(request_header(w, no_memory));
  CHECK_THAT(expect_error(w, ErrorCode::kMalformed), Catch::Contains("device 'b'"));
  auto twice = good;  // psrt-place's devices file refused it; the service took it
  twice.mutable_devices(1)->set_name(good.devices(0).name());
  w.send(request_header(w, twice));
  CHECK_THAT(expect_error(w, ErrorCode::kMalformed), Catch::Contains("named twice"));

  // Server counts that would make pricing a plan take minutes: refused at once.
  auto many_servers = good;
  many_servers.set_servers(100000);
  w.send(request_header(w, many_servers));
  CHECK_THAT(expect_error(w, ErrorCode::kMalformed), Catch::Contains("servers must be at most"));
  auto annealing_servers = good;
  annealing_servers.set_placer("annealing");
  annealing_servers.set_servers(placement::kMaxSimSearchServers + 1);
  w.send(request_header(w, annealing_servers));
  CHECK_THAT(expect_error(w, ErrorCode::kMalformed), Catch::Contains("annealing is limited"));

  auto bad_batch = good;
  bad_batch.set_micro_batches(100);
  w.send(request_header(w, bad_batch));
  CHECK_THAT(expect_error(w, ErrorCode::kMalformed), Catch::Contains("micro_batches"));

  const auto tight = placement::to_message(chain_request(6, 200000));
  w.send(request_header(w, tight));
  CHECK_THAT(expect_error(w, ErrorCode::kMalformed),
             Catch::Contains("infeasible") && Catch::Contains("bytes missing"));

  // A 5 MB placer name: its ERROR was too large to send ("internal: ERROR of 5242924 bytes"),
  // and a 10 MB log line. Shown bounded now; the request's seq comes back with the refusal.
  auto long_name = good;
  long_name.set_placer(std::string(5 << 20, 'x'));
  auto numbered = request_header(w, long_name);
  numbered.set_seq(42);
  w.send(numbered);
  const Reply refused = expect(w, wire::ERROR);
  const std::string& refusal = refused.header.error().message();
  CHECK_THAT(refusal, Catch::StartsWith("unknown placer 'xxx") && Catch::EndsWith("...'"));
  CHECK(refusal.size() < 200);
  CHECK(refused.header.seq() == 42);
  // An exact search of devices x layers^2 steps held the service for minutes.
  auto slow = placement::to_message(chain_request(placement::kMaxRequestLayers, 1 << 30));
  slow.set_placer("pipedream");
  for (int d = 0; d < 30; ++d) {  // 32 devices x 20000^2 layers: 1.28e10 steps
    auto* more = slow.add_devices();
    *more = slow.devices(0);
    more->set_name("x" + std::to_string(d));
  }
  w.send(request_header(w, slow));
  CHECK_THAT(expect_error(w, ErrorCode::kMalformed),
             Catch::Contains("pipedream's exact search takes devices x layers^2 steps"));
}

}  // namespace

TEST_CASE("psrt-placer answers bad requests with errors and still serves a good one",
          "[integration]") {
  Proc placer("placer", {bin("psrt-placer"), "--bind", "tcp://127.0.0.1:0", "--job-id",
                         "placejob"});
  REQUIRE(placer.wait_line("PSRT_LISTENING", 30));
  const std::string ep = endpoint_of(placer);
  zmq::context_t ctx;
  RawClient w(ctx, ep, "t1", kTool);

  const auto good = placement::to_message(chain_request(6, 1 << 30));
  send_bad_requests(w, good);

  // Still serving: the good request gets the plan the library makes in-process.
  w.send(request_header(w, good));
  const Reply ok = expect(w, wire::PLACE_REPLY);
  const auto r = chain_request(6, 1 << 30);
  const auto local = placement::place("netplacer", {r.model, r.devices, r.setup, r.options});
  REQUIRE(local);
  const auto& reply = ok.header.place_reply();
  REQUIRE(reply.device_of_layer_size() == 6);
  for (int i = 0; i < 6; ++i) CHECK(reply.device_of_layer(i) == local->device_of_layer[i]);
  CHECK(reply.step_ms() == Approx(local->step_ms));
  CHECK(reply.device_memory_bytes_size() == 2);
  // A reply whose times are none, or whose name holds escapes and a newline, was printed as it
  // came (forged log lines) and written, refused only when read back (a wire probe's placer).
  CHECK(placement::plan_from_reply(reply, r));
  for (int fault = 0; fault < 3; ++fault) {
    wire::PlaceReply bad = reply;
    if (fault == 0) bad.set_step_ms(std::nan(""));
    if (fault == 1) bad.set_device_compute_ms(0, -1);
    if (fault == 2) bad.set_placer("fake\x1b[31m\nforged line");
    const auto refused = placement::plan_from_reply(bad, r);
    REQUIRE_FALSE(refused);
    CHECK_THAT(refused.status().message(), Catch::Contains(fault == 2 ? "not a name" : "not one"));
  }

  // The client library, and psrt-place writing a plan that psrt-sim prices.
  const auto asked = placement::ask_placer(ep, "placejob", r, 30);
  REQUIRE(asked);
  CHECK(asked->device_of_layer == local->device_of_layer);
  const auto wrong_job = placement::ask_placer(ep, "otherjob", r, 30);
  CHECK_FALSE(wrong_job);
  // A placer that cannot be there: the name that does not resolve is given.
  const auto nowhere = placement::ask_placer("tcp://no-such-host.invalid:5700", "placejob", r, 0.2);
  REQUIRE_FALSE(nowhere);
  CHECK_THAT(nowhere.status().message(),
             Catch::Contains("within 0.2 s: its host 'no-such-host.invalid' does not resolve"));

  const std::string dir = temp_dir("placer");
  write_file(dir + "/devices.yaml",
             "devices: [{name: a, memory_gib: 4, gflops: 10000}, {name: b, memory_gib: 4, "
             "gflops: 10000}]\nbatch_size: 32\nmicro_batches: 4\n");
  Proc place("place", {bin("psrt-place"), "--profile", source("bench/profiles/vgg16.yaml"),
                       "--devices", dir + "/devices.yaml", "--placer-address", ep, "--job-id",
                       "placejob", "--out", dir + "/plan.yaml"});
  REQUIRE(place.wait_exit(60) == std::optional<int>(0));
  CHECK_THAT(place.output(), Catch::Contains("| 0 | a |"));
  // Another job's id: its refusal carries the placer's id, and was "a bad reply (9 bytes)".
  Proc wrong("place", {bin("psrt-place"), "--profile", source("bench/profiles/vgg16.yaml"),
                       "--devices", dir + "/devices.yaml", "--placer-address", ep, "--job-id",
                       "otherjob"});
  CHECK(wrong.wait_exit(60) == std::optional<int>(1));
  CHECK_THAT(wrong.output(), Catch::Contains("serves another job than 'otherjob'"));
  Proc sim("sim", {bin("psrt-sim"), "--profile", source("bench/profiles/vgg16.yaml"),
                   "--placement", dir + "/plan.yaml", "--servers", "2"});
  REQUIRE(sim.wait_exit(60) == std::optional<int>(0));
  CHECK_THAT(sim.output(), Catch::Contains("step_ms"));

  placer.kill(SIGTERM);
  CHECK(placer.wait_exit(30) == std::optional<int>(0));
  CHECK_THAT(placer.output(), Catch::Contains("1 served") || Catch::Contains("2 served"));
}

TEST_CASE("psrt-placer stops a searching placer at --max-search-s and serves the next request",
          "[integration]") {
  Proc placer("placer", {bin("psrt-placer"), "--bind", "tcp://127.0.0.1:0", "--job-id",
                         "placejob", "--max-search-s", "0.000001"});
  REQUIRE(placer.wait_line("PSRT_LISTENING", 30));
  zmq::context_t ctx;
  RawClient w(ctx, endpoint_of(placer), "t1", kTool);
  placement::Request slow = chain_request(6, 1 << 30);
  slow.placer = "annealing";
  w.send(request_header(w, placement::to_message(slow)));
  CHECK_THAT(expect_error(w, ErrorCode::kMalformed),
             Catch::Contains("search limit") && Catch::Contains("annealing"));
  w.send(request_header(w, placement::to_message(chain_request(6, 1 << 30))));
  CHECK(expect(w, wire::PLACE_REPLY).header.place_reply().device_of_layer_size() == 6);
  placer.kill(SIGTERM);
  CHECK(placer.wait_exit(30) == std::optional<int>(0));
}

TEST_CASE("psrt-place --config describes the job's own native network", "[integration][placer]") {
  const std::string dir = temp_dir("placeconfig");
  write_file(dir + "/job.yaml",
             "job: {id: own, iterations: 3}\n"
             "model: {arch: custom, layers: [{conv: 8, kernel: 5, stride: 2}, relu, pool, "
             "{fc: 10}]}\n");
  Proc custom("place", {bin("psrt-place"), "--config", dir + "/job.yaml", "--write-profile",
                        dir + "/custom.yaml"});
  REQUIRE(custom.wait_exit(60) == std::optional<int>(0));
  // 1x28x28 -> conv 8x14x14 -> pool 8x7x7 -> fc 10
  const ModelDesc c = load_profile(dir + "/custom.yaml");
  REQUIRE(c.tensors.size() == 4);
  CHECK(c.tensors[0].name == "conv1.weight");
  CHECK(c.tensors[0].num_elements == 8 * 25);
  CHECK(c.tensors[2].name == "fc1.weight");
  CHECK(c.tensors[2].num_elements == 8 * 7 * 7 * 10);
  // The MLP's widths come from the job too, not the default ones.
  write_file(dir + "/mlp-job.yaml", "job: {id: own, iterations: 3}\nmodel: {hidden: [48]}\n");
  Proc mlp("place", {bin("psrt-place"), "--config", dir + "/mlp-job.yaml", "--write-profile",
                     dir + "/mlp.yaml"});
  REQUIRE(mlp.wait_exit(60) == std::optional<int>(0));
  const ModelDesc m = load_profile(dir + "/mlp.yaml");
  REQUIRE(m.tensors.size() == 4);
  CHECK(m.tensors[0].num_elements == 784 * 48);
}

TEST_CASE("psrt-place and psrt-sim refuse what would make a plan or a run no reader takes",
          "[integration][placer]") {
  const std::string dir = temp_dir("placerefuse");
  write_file(dir + "/devices.yaml",
             "devices: [{name: a, memory_gib: 4, gflops: 100}, {name: b, memory_gib: 4, "
             "gflops: 100}]\nbatch_size: 8\n");
  const auto refused = [&](std::vector<std::string> argv, const std::string& why) {
    Proc p("tool", std::move(argv));
    CHECK(p.wait_exit(60) == std::optional<int>(2));
    CHECK_THAT(p.output(), Catch::Contains(why));
  };
  const std::string profile = source("bench/profiles/lenet5.yaml");
  // An unknown placer exited 1 after the request was made.
  refused({bin("psrt-place"), "--profile", profile, "--devices", dir + "/devices.yaml",
           "--placer", "foo"},
          "--placer: 'foo' is not a placer (netplacer, ");
  // 100 micro-batches of a batch of 8: a plan its readers refused.
  refused({bin("psrt-place"), "--profile", profile, "--devices", dir + "/devices.yaml",
           "--micro-batches", "100", "--out", dir + "/plan.yaml"},
          "--micro-batches: 100 micro-batches of a batch of 8");
  CHECK_FALSE(std::filesystem::exists(dir + "/plan.yaml"));
  // More servers than a job may have: the shard map's balancing took minutes there.
  refused({bin("psrt-sim"), "--profile", profile, "--servers", "2000"}, "--servers");
  // A batch the plan's readers refuse was written; 0 was ignored; NaN ended in std::terminate.
  refused({bin("psrt-place"), "--profile", profile, "--devices", dir + "/devices.yaml",
           "--batch", "2000000", "--out", dir + "/plan.yaml"},
          "--batch");
  refused({bin("psrt-place"), "--profile", profile, "--devices", dir + "/devices.yaml",
           "--batch", "0"},
          "--batch");
  // An output nowhere: found after the whole search, with no reason given.
  refused({bin("psrt-place"), "--profile", profile, "--devices", dir + "/devices.yaml", "--out",
           dir + "/no-such-folder/plan.yaml"},
          "/no-such-folder is not a folder");
  refused({bin("psrt-sim"), "--profile", profile, "--scale", "nan"},
          "--scale: nan is not a number");
  refused({bin("psrt-bench-compress"), "--elements", "-5"}, "--elements");
  // A folder given as a plan or devices file: "basic_filebuf::underflow error", no path.
  refused({bin("psrt-sim"), "--profile", profile, "--placement", dir},
          dir + ": not a regular file; a placement plan");
  refused({bin("psrt-place"), "--profile", profile, "--devices", dir},
          dir + ": not a regular file; a devices file");
  // --set without --config was ignored, unknown keys too: a plan for batch 32 for batch 8 asked.
  refused({bin("psrt-place"), "--profile", profile, "--devices", dir + "/devices.yaml", "--set",
           "job.batch_size=8", "--out", dir + "/plan.yaml"},
          "--set job.batch_size=8: --set overrides a key of the job file, so it needs --config");
  CHECK_FALSE(std::filesystem::exists(dir + "/plan.yaml"));
  // A layer time that the scale takes past a clock's range was replayed as no time at all.
  write_file(dir + "/slow.yaml", "name: slow\nlayers:\n  - {name: a, forward_ms: 10000000, "
                                 "tensors: [{name: w, elements: 10}]}\n");
  refused({bin("psrt-sim"), "--profile", dir + "/slow.yaml", "--scale", "1000000"},
          "forward_ms: times the scale is");
  // psrt-placer bound port 99999 as 34463 (ZeroMQ wraps it) and took any log level.
  refused({bin("psrt-placer"), "--bind", "tcp://127.0.0.1:99999"},
          "is not tcp://HOST:PORT with a port from 0 to 65535");
  refused({bin("psrt-placer"), "--log-level", "foo"}, "--log-level");
  // Past --scale 32 the scaled default batch was refused with an internal constant's name.
  Proc scaled("sim", {bin("psrt-sim"), "--profile", profile, "--workers", "2", "--scale", "40"});
  CHECK(scaled.wait_exit(60) == std::optional<int>(0));
}

// A devices file without the training setup replaced the job's (--config) batch, micro-batches
// and optimizer with the defaults: a plan of another shape than the job.
TEST_CASE("psrt-place keeps the job's training setup that a devices file leaves out",
          "[integration][placer]") {
  const std::string dir = temp_dir("placesetup");
  write_file(dir + "/devices.yaml",
             "devices: [{name: a, memory_gib: 4, gflops: 100}, {name: b, memory_gib: 4, "
             "gflops: 100}]\n");
  write_file(dir + "/job.yaml",
             "job: {id: setup, batch_size: 64, iterations: 10}\n"
             "cluster: {servers: 1, workers: 2}\n"
             "model: {backend: native, arch: lenet5}\noptimizer: {type: adam}\n"
             "placement: {mode: model, partitions: 2, micro_batches: 4}\n");
  Proc place("place", {bin("psrt-place"), "--config", dir + "/job.yaml", "--devices",
                       dir + "/devices.yaml", "--out", dir + "/plan.yaml"});
  REQUIRE(place.wait_exit(60) == std::optional<int>(0));
  std::ifstream in(dir + "/plan.yaml");
  const std::string plan((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  INFO(plan);
  CHECK_THAT(plan, Catch::Contains("batch_size: 64"));
  CHECK_THAT(plan, Catch::Contains("micro_batches: 4"));
  CHECK_THAT(plan, Catch::Contains("optimizer: adam"));
}

// psrt-sim priced a plan with 2 servers where psrt-place had priced it with one per device, and
// said neither: a 66% "miss" of the plan's prediction that was only a default.
TEST_CASE("psrt-sim prices a plan with psrt-place's servers unless told otherwise",
          "[integration][placer]") {
  const std::string dir = temp_dir("simservers");
  write_file(dir + "/devices.yaml",
             "devices: [{name: a, memory_gib: 4, gflops: 100}, {name: b, memory_gib: 4, "
             "gflops: 100}, {name: c, memory_gib: 4, gflops: 50}]\nbatch_size: 32\n");
  const std::string profile = source("bench/profiles/vgg16.yaml");
  Proc place("place", {bin("psrt-place"), "--profile", profile, "--devices",
                       dir + "/devices.yaml", "--out", dir + "/plan.yaml"});
  REQUIRE(place.wait_exit(60) == std::optional<int>(0));
  Proc sim("sim", {bin("psrt-sim"), "--profile", profile, "--placement", dir + "/plan.yaml"});
  REQUIRE(sim.wait_exit(60) == std::optional<int>(0));
  const std::string out = sim.output();
  INFO(out);
  CHECK_THAT(out, Catch::Contains("3 devices, 3 servers"));
  const auto at = out.find("step_ms "), said = out.find("(the plan predicted ");
  REQUIRE(at != std::string::npos);
  REQUIRE(said != std::string::npos);
  const std::string step = out.substr(at + 8, out.find(' ', at + 8) - at - 8);
  CHECK(out.substr(said + 20, step.size()) == step);
}

// A stop signal during a search: the loop read it only between requests (a 3000-layer search on
// 1024 devices held SIGTERM for 24 s and then sent its plan).
TEST_CASE("psrt-placer stops at once when told to during a search", "[integration][placer]") {
  Proc placer("placer", {bin("psrt-placer"), "--bind", "tcp://127.0.0.1:0", "--job-id",
                         "placejob"});
  REQUIRE(placer.wait_line("PSRT_LISTENING", 30));
  zmq::context_t ctx;
  RawClient w(ctx, endpoint_of(placer), "t1", kTool);
  placement::Request big = chain_request(3000, 1 << 30);
  big.devices.devices.clear();
  for (int d = 0; d < 1024; ++d) {
    std::string name = "d";  // (GCC 12 -Werror=restrict on "d" + std::to_string(d))
    name += std::to_string(d);
    big.devices.devices.push_back({name, 1 << 30, 1});
  }
  w.send(request_header(w, placement::to_message(big)));
  REQUIRE(placer.wait_line("placing 3000 layers on 1024 devices", 30));
  placer.kill(SIGTERM);
  const auto rc = placer.wait_exit(15);  // the search alone takes 20 s and more here
  INFO(placer.output());
  CHECK(rc == std::optional<int>(0));
  CHECK_THAT(placer.output(), Catch::Contains("stopping during a search"));
  CHECK_FALSE(w.recv(0.1));  // no plan after the stop
}
