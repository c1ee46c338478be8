// Model parallelism, the failure paths: placement combinations that cannot run are refused at
// start (exit 2, one line naming the key); a stage that dies or goes silent ends the whole job
// naming it; a malformed activation message gets an ERROR reply and ends the job with a line
// naming the sender and what was wrong, never a hang; a stranger on a stage port is ignored.
#include <signal.h>
#include <catch2/catch.hpp>

#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "config/job_config.h"
#include "core/config.h"
#include "core/stage_layout.h"
#include "engine/net_spec.h"
#include "engine/network.h"
#include "tests/integration/raw_client.h"
#include "tests/integration/raw_group.h"

using namespace psrt;
using namespace psrt::test;

namespace {

std::string job_yaml(const std::string& placement,
                     const std::string& model = "{backend: native, arch: lenet5}") {
  return "job: {id: mpf, iterations: 1000000, batch_size: 16, log_every: 0, evaluate: false}\n"
         "cluster: {servers: 2, workers: 2, start_timeout_s: 60, heartbeat_s: 0.2, "
         "peer_timeout_s: 1.5}\n"
         "model: " +
         model +
         "\n"
         "data: {train_limit: 512}\n"
         "optimizer: {type: sgd, lr: 0.01}\n"
         "placement: " +
         placement + "\n";
}

}  // namespace

TEST_CASE("placement combinations that cannot run are refused naming the key",
          "[integration][model_parallel]") {
  const std::string dir = temp_dir("mpf-config");
  write_file(dir + "/plan.yaml",
             "devices: [{name: a, memory_gib: 1, gflops: 1}, {name: b, memory_gib: 1, gflops: 1}, "
             "{name: c, memory_gib: 1, gflops: 1}]\n"
             "stages:\n"
             "  - {device: a, layers: [conv1, relu1, pool1]}\n"
             "  - {device: b, layers: [conv2, relu2, pool2, flatten]}\n"
             "  - {device: c, layers: [fc1, relu3, fc2, relu4, fc3, loss]}\n");
  const std::string devices = "devices: [{name: a, memory_gib: 1, gflops: 1}]";
  struct Case {
    std::string yaml, key;
  };
  const std::vector<Case> cases{
      {job_yaml("{mode: data, partitions: 2}"), "placement.partitions"},
      {job_yaml("{mode: model, partitions: 3}"), "placement.partitions"},
      {job_yaml("{mode: hybrid, partitions: 2}"), "placement.partitions"},
      {job_yaml("{mode: model, partitions: 1}"), "placement.partitions"},
      {job_yaml("{mode: model, partitions: 2, micro_batches: 17}"), "placement.micro_batches"},
      {job_yaml("{mode: pipeline, partitions: 2}"), "placement.mode"},
      // The gpu backend runs split jobs; what no backend's stages do is still refused on it.
      {job_yaml("{mode: model, partitions: 2}", "{backend: gpu, arch: lenet5}") +
           "scheduler: {grouping: auto}\n",
       "scheduler.grouping"},
      {job_yaml("{mode: model, partitions: 2, plan: '" + dir + "/plan.yaml', " + devices + "}"),
       "placement.plan"},
  };
  for (const auto& c : cases) {
    const std::string cfg = dir + "/job.yaml";
    write_file(cfg, c.yaml);
    Proc p("worker", {bin("psrt-worker"), "--config", cfg, "--rank", "0"});
    const auto rc = p.wait_exit(30);
    INFO(c.yaml << "\noutput:\n" << p.output());
    REQUIRE(rc.has_value());
    CHECK(*rc == 2);
    CHECK(count_lines(p.output()) == 1);
    CHECK_THAT(p.output(), Catch::Contains(c.key));
  }
}

namespace {

struct StageCluster {
  std::vector<std::unique_ptr<Proc>> procs;  // server 0, server 1, worker 0, worker 1
  std::vector<std::string> names;

  StageCluster() {
    const std::string dir = temp_dir("mpf");
    const std::string cfg = dir + "/job.yaml";
    write_file(cfg, job_yaml("{mode: model, partitions: 2}"));
    Daemons d = start_daemons(cfg, 2, 2);
    INFO(d.procs[0]->output());
    REQUIRE(d.started);
    procs = std::move(d.procs);
    names = std::move(d.names);
  }

  // Every process but `victim` exits 1 naming `lost`.
  void check_others(std::size_t victim, const std::string& lost) {
    for (std::size_t i = 0; i < procs.size(); ++i) {
      if (i == victim) continue;
      const auto rc = procs[i]->wait_exit(30);
      INFO(names[i] << " output:\n" << procs[i]->output());
      REQUIRE(rc.has_value());  // else it still runs: a hang
      CHECK(*rc == 1);
      CHECK_THAT(procs[i]->output(), Catch::Contains(lost));
    }
  }
};

}  // namespace

TEST_CASE("a killed stage ends the whole job naming it", "[integration][model_parallel]") {
  StageCluster c;
  c.procs[3]->kill(SIGKILL);
  REQUIRE(c.procs[3]->wait_exit(10) == 128 + SIGKILL);
  c.check_others(3, "worker 1");
}

TEST_CASE("a silent (stopped) stage ends the whole job naming it",
          "[integration][model_parallel]") {
  StageCluster c;
  c.procs[2]->kill(SIGSTOP);  // stage 0: alive, silent
  c.check_others(2, "worker 0");
  c.procs[2]->kill(SIGKILL);
  CHECK(c.procs[2]->wait_exit(10).has_value());
}

namespace {

// Registers `w0` as stage 0 of 2 with its layers' tensors and passes the start barrier; returns
// the MEMBERSHIP reply.
Reply join_as_stage0(RawClient& w0, const ModelDesc& model, const StageLayout& layout) {
  wire::Header reg = w0.header(wire::REGISTER);
  for (const auto& t : model.tensors) {
    auto* ti = reg.mutable_register_()->add_tensors();
    ti->set_key(t.key);
    ti->set_name(t.name);
    ti->set_num_elements(t.num_elements);
    ti->set_layer(t.layer);
  }
  reg.mutable_stage()->set_stage(0);
  reg.mutable_stage()->set_stages(2);
  for (uint32_t k : layout.keys(0, model)) reg.mutable_stage()->add_keys(k);
  w0.send(reg);
  Reply m = expect(w0, wire::MEMBERSHIP);
  wire::Header barrier = w0.header(wire::BARRIER);
  barrier.mutable_barrier()->set_name("start");
  w0.send(barrier);
  expect(w0, wire::BARRIER_RELEASE);
  return m;
}

// Server 0 and stage 1 are real; a raw client registers as stage 0 and sends the activations.
struct RawStage0 {
  static constexpr const char* kYaml =
      "job: {id: mpf, iterations: 1000, batch_size: 16, log_every: 0, evaluate: false}\n"
      "cluster: {servers: 1, workers: 2, start_timeout_s: 60, heartbeat_s: 0.2, "
      "peer_timeout_s: 20}\n"
      "model: {backend: native, arch: lenet5}\n"
      "data: {train_limit: 512}\n"
      "placement: {mode: model, partitions: 2}\n";
  ServerProc server{kYaml};
  Proc stage1{"worker 1", {bin("psrt-worker"), "--config", server.dir + "/job.yaml", "--rank", "1",
                           "--set", "cluster.coordinator=" + server.endpoint}};
  const Config config = parse_config(kYaml, "test");
  const ModelDesc model = engine::describe_network(engine::net_spec(config));
  const StageLayout layout = stage_layout(config, model);
  const uint64_t width = model.layers[layout.ranges[1].first - 1].activation_elements;
  zmq::context_t ctx{1};
  const std::string identity = process_identity(wire::WORKER, 0);
  const Sender self{wire::WORKER, 0, "mpf"};
  RawClient w0{ctx, server.endpoint, identity, self};
  const Reply m = join_as_stage0(w0, model, layout);

  // An ACTIVATION of iteration 0 with `samples` zero rows and labels; `lie`: the header claims 4
  // bytes more than the frames hold.
  void send_activation(RawClient& link, uint32_t samples, bool lie, uint32_t eval_batches) const {
    wire::Header act = link.header(wire::ACTIVATION);
    act.set_iteration(0);
    act.set_micro_batch(0);
    act.set_eval_batches(eval_batches);
    act.set_samples(samples);
    act.set_num_elements(samples * width);
    std::vector<zmq::message_t> frames;
    frames.emplace_back(samples * width * sizeof(float));
    std::memset(frames.back().data(), 0, frames.back().size());
    frames.emplace_back(samples * sizeof(int32_t));
    std::memset(frames.back().data(), 0, frames.back().size());
    act.set_payload_bytes((samples * width + samples) * 4 + (lie ? 4 : 0));
    act.set_seq(1);
    link.send(act, std::move(frames));
  }
  // Stage 1 ends the job on the malformed message of the real stage 0.
  void check_job_failed() {
    const auto rc = stage1.wait_exit(30);
    INFO(stage1.output());
    REQUIRE(rc.has_value());
    CHECK(*rc == 1);
    CHECK_THAT(stage1.output(), Catch::Contains("malformed"));
    CHECK_THAT(stage1.output(), Catch::Contains("from worker 0 (stage 0 of replica 0)"));
    const auto src = server.proc->wait_exit(30);
    INFO(server.proc->output());
    REQUIRE(src.has_value());
    CHECK(*src == 1);
    CHECK_THAT(server.proc->output(), Catch::Contains("worker 1 gave up"));
  }
};

}  // namespace

TEST_CASE_METHOD(RawStage0, "a malformed activation message gets an ERROR reply and stops the job",
                 "[integration][model_parallel]") {
  REQUIRE(m.header.stage_map().workers_size() == 2);
  const std::string address = m.header.stage_map().workers(1).address();
  // The server answers a tensor's holder only: stage 0 may not pull stage 1's values.
  const uint32_t theirs = layout.keys(1, model).front();
  for (const auto& c : m.header.membership().chunks()) {
    if (c.key() != theirs) continue;
    w0.send(w0.tensor(wire::PULL, c.key(), c.offset(), c.length(), 0));
    CHECK_THAT(expect_error(w0, ErrorCode::kUnexpected), Catch::Contains("does not hold tensor"));
    break;
  }

  RawClient link(ctx, address, identity, self);
  // 0: wrong sample count; 1: a header that lies about its payload; 2: a test-set batch where no
  // pass is due (job.evaluate is off); the batch's only micro-batch has 16 samples
  const int fault = GENERATE(0, 1, 2);
  send_activation(link, fault == 0 ? 5 : 16, fault == 1, fault == 2 ? 3 : 0);
  const Reply err = expect(link, wire::ERROR);
  INFO(err.header.error().message());
  CHECK(err.header.error().code() == uint32_t(ErrorCode::kBadSize));
  const char* why[] = {"16 samples", "payload bytes", "no test-set pass is due"};
  CHECK_THAT(err.header.error().message(), Catch::Contains(why[fault]));
  check_job_failed();
}

// A group (or batch) push naming another stage's tensor crashed the server (it aggregated pushes
// that tensor's holder never sent: SIGSEGV) or stepped that tensor without its holder (a wire
// probe).
TEST_CASE_METHOD(RawStage0, "a group push naming a tensor its sender does not hold is refused",
                 "[integration][model_parallel]") {
  std::vector<uint64_t> sizes;
  for (const auto& t : model.tensors) sizes.push_back(t.num_elements);
  const uint32_t mine = layout.keys(0, model).front();
  const uint32_t theirs = layout.keys(1, model).front();
  std::mt19937 rng(3);
  for (bool batch : {false, true}) {
    RawGroup g = group_push(w0, sizes, {mine, theirs}, 0, rng);
    g.header.set_batch(batch);
    w0.send(g.header, g.frames());
    CHECK_THAT(expect_error(w0, ErrorCode::kUnexpected),
               Catch::Contains("group member 1 of 2") &&
                   Catch::Contains("does not hold tensor " + std::to_string(theirs)));
  }
  // The server carries on, and answers stage 0 as before.
  w0.send(w0.tensor(wire::PULL, theirs, 0, sizes[theirs], 0));
  CHECK_THAT(expect_error(w0, ErrorCode::kUnexpected), Catch::Contains("does not hold tensor"));
  CHECK_FALSE(server.proc->wait_exit(1).has_value());
}

// The stage port takes the previous stage's registered connection only: a stranger that names
// itself worker 0 (any suffix) is ignored, whatever it sends, and the real stage 0 still counts.
TEST_CASE_METHOD(RawStage0, "a stranger on the stage port is ignored and the job goes on",
                 "[integration][model_parallel]") {
  const std::string address = m.header.stage_map().workers(1).address();
  RawClient stranger(ctx, address, process_identity(wire::WORKER, 0), self);
  stranger.send(stranger.header(wire::HEARTBEAT));
  send_activation(stranger, 16, false, 0);  // well formed: it would be trained on
  send_activation(stranger, 5, false, 0);   // malformed: it would end the job
  CHECK_FALSE(stranger.recv(2).has_value());
  CHECK(stage1.wait_line("ignored a message from w0.", 10));
  CHECK_FALSE(stage1.wait_exit(1).has_value());
  RawClient link(ctx, address, identity, self);
  send_activation(link, 5, false, 0);
  const Reply err = expect(link, wire::ERROR);
  CHECK_THAT(err.header.error().message(), Catch::Contains("16 samples"));
  check_job_failed();
}
