#include "tests/integration/raw_job.h"

#include <catch2/catch.hpp>

namespace psrt::test {

std::string raw_job_yaml(int workers) {
  return "job: {id: rawjob, iterations: 1}\n"
         "cluster: {servers: 1, workers: " +
         std::to_string(workers) +
         ", start_timeout_s: 60, heartbeat_s: 0.2, peer_timeout_s: 60}\n"
         "optimizer: {type: sgd, lr: 0.5, momentum: 0, weight_decay: 0}\n"
         "scheduler: {mode: fifo}\n"
         "log_level: info\n";
}

// Multiples of 1/64 in [-1, 1]: p - 0.5 * g is exact in fp32.
std::vector<float> dyadic(std::size_t n, std::mt19937& rng) {
  std::uniform_int_distribution<int> d(-64, 64);
  std::vector<float> v(n);
  for (auto& x : v) x = float(d(rng)) / 64.0f;
  return v;
}

wire::Header register_header(RawClient& w, const std::vector<uint64_t>& sizes,
                             const std::vector<uint32_t>& keys) {
  wire::Header h = w.header(wire::REGISTER);
  for (std::size_t k = 0; k < sizes.size(); ++k) {
    auto* t = h.mutable_register_()->add_tensors();
    t->set_key(keys.empty() ? uint32_t(k) : keys[k]);
    t->set_name("tensor" + std::to_string(k));
    t->set_num_elements(sizes[k]);
    t->set_layer(uint32_t(k));
  }
  return h;
}

std::vector<std::vector<float>> start_job(const std::vector<RawClient*>& workers,
                                          std::mt19937& rng,
                                          const std::vector<uint64_t>& kSizes) {
  for (RawClient* w : workers) w->send(register_header(*w, kSizes));
  for (RawClient* w : workers) {
    const Reply m = expect(*w, wire::MEMBERSHIP);
    REQUIRE(m.header.membership().chunks_size() == int(kSizes.size()));
    for (std::size_t k = 0; k < kSizes.size(); ++k) {
      const auto& c = m.header.membership().chunks(int(k));
      REQUIRE(c.key() == k);
      REQUIRE(c.offset() == 0);
      REQUIRE(c.length() == kSizes[k]);
    }
  }
  RawClient& w0 = *workers.front();
  std::vector<std::vector<float>> params;
  for (std::size_t k = 0; k < kSizes.size(); ++k) {
    params.push_back(dyadic(kSizes[k], rng));
    const wire::Header init =
        w0.tensor(wire::INIT, uint32_t(k), 0, kSizes[k], 0, &params.back());
    w0.send(init, RawClient::frame_of(params.back()));
    const Reply ack = expect(w0, wire::ACK);
    CHECK(ack.header.seq() == init.seq());
  }
  for (RawClient* w : workers) {
    wire::Header b = w->header(wire::BARRIER);
    b.mutable_barrier()->set_name("start");
    w->send(b);
  }
  for (RawClient* w : workers) {
    CHECK(expect(*w, wire::BARRIER_RELEASE).header.barrier().name() == "start");
  }
  for (RawClient* w : workers) {
    for (std::size_t k = 0; k < kSizes.size(); ++k) {
      w->send(w->tensor(wire::PULL, uint32_t(k), 0, kSizes[k], 0));
      const Reply p = expect(*w, wire::PARAMS);
      CHECK(p.header.key() == k);
      CHECK(p.header.iteration() == 0);
      REQUIRE(p.payload.size() == 1);
      CHECK(floats_of(p.payload[0]) == params[k]);
    }
  }
  return params;
}

void shutdown_and_exit(const std::vector<RawClient*>& workers, ServerProc& s) {
  for (RawClient* w : workers) {
    wire::Header b = w->header(wire::BARRIER);
    b.mutable_barrier()->set_name("shutdown");
    w->send(b);
  }
  for (RawClient* w : workers) {
    CHECK(expect(*w, wire::BARRIER_RELEASE).header.barrier().name() == "shutdown");
  }
  const auto rc = s.proc->wait_exit(30);
  INFO(s.proc->output());
  CHECK(rc == 0);
}

// The server has not exited (reads its output meanwhile, for the failure message).
void still_running(ServerProc& s) {
  const auto rc = s.proc->wait_exit(0.2);
  INFO(s.proc->output());
  REQUIRE_FALSE(rc);
}

}  // namespace psrt::test
