// Server 0's coordinator logic without sockets: registration, membership, barriers, liveness.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "core/wire_grouping.h"
#include "server/coordinator.h"

using namespace psrt;
using namespace std::chrono_literals;

namespace {

const PeerId kS0{wire::SERVER, 0}, kS1{wire::SERVER, 1};
const PeerId kW0{wire::WORKER, 0}, kW1{wire::WORKER, 1};

wire::Register server_reg(int port) {
  wire::Register r;
  std::string address = "tcp://127.0.0.1:";
  address.append(std::to_string(port));
  r.set_address(address);
  return r;
}

// A model of tensors with these element counts, keys 0..n-1.
wire::Register worker_reg(const std::vector<uint64_t>& sizes) {
  wire::Register r;
  for (std::size_t k = 0; k < sizes.size(); ++k) {
    auto* t = r.add_tensors();
    t->set_key(uint32_t(k));
    t->set_name(std::to_string(k));
    t->set_num_elements(sizes[k]);
    t->set_layer(uint32_t(k));
  }
  return r;
}

SchedulerConfig chunked(uint64_t chunk_bytes) {
  SchedulerConfig s;
  s.mode = Mode::kPreemptive;
  s.chunk_bytes = chunk_bytes;
  return s;
}

const std::vector<uint64_t> kModel{5000, 17, 12000, 1};

// 2 servers, 2 workers, everyone registered at t0.
Coordinator full(Clock::time_point t0, SchedulerConfig sched = chunked(4096)) {
  Coordinator c(2, 2, sched);
  REQUIRE(c.on_register(kS0, server_reg(1), t0));
  REQUIRE(c.on_register(kS1, server_reg(2), t0));
  REQUIRE(c.on_register(kW0, worker_reg(kModel), t0));
  REQUIRE(c.on_register(kW1, worker_reg(kModel), t0));
  REQUIRE(c.all_registered());
  return c;
}

}  // namespace

TEST_CASE("registration of a rank outside the job is refused", "[coordinator]") {
  const auto t0 = Clock::now();
  Coordinator c(2, 2, SchedulerConfig{});
  for (const PeerId p : {PeerId{wire::SERVER, 2}, PeerId{wire::WORKER, 2},
                         PeerId{wire::WORKER, 4000000000u}, PeerId{wire::TOOL, 0},
                         PeerId{wire::ROLE_UNSPECIFIED, 0}}) {
    const Status st =
        c.on_register(p, p.role == wire::SERVER ? server_reg(9) : worker_reg(kModel), t0);
    INFO(describe(p));
    CHECK_FALSE(st);
    CHECK_THAT(st.message(), Catch::Contains("not part of this job"));
    CHECK_FALSE(c.is_registered(p));
  }
  CHECK(c.registered_peers().empty());
}

TEST_CASE("registrations that lack what the role needs are refused", "[coordinator]") {
  const auto t0 = Clock::now();
  Coordinator c(2, 2, SchedulerConfig{});
  CHECK_FALSE(c.on_register(kS1, wire::Register{}, t0));
  CHECK_FALSE(c.on_register(
      kS1,
      [] {
        wire::Register r;
        r.set_address("ipc:///x");
        return r;
      }(),
      t0));
  const Status none = c.on_register(kW0, wire::Register{}, t0);
  CHECK_FALSE(none);
  CHECK_THAT(none.message(), Catch::Contains("worker 0"));
  CHECK_FALSE(c.is_registered(kS1));
  CHECK_FALSE(c.is_registered(kW0));
}

TEST_CASE("workers with different tensor lists are refused with a message", "[coordinator]") {
  const auto t0 = Clock::now();
  Coordinator c(1, 3, SchedulerConfig{});
  REQUIRE(c.on_register(kS0, server_reg(1), t0));
  REQUIRE(c.on_register(kW0, worker_reg({10, 20}), t0));
  for (const auto& other : std::vector<std::vector<uint64_t>>{{10, 21}, {10}, {10, 20, 30}}) {
    const Status st = c.on_register(kW1, worker_reg(other), t0);
    CHECK_FALSE(st);
    CHECK_THAT(st.message(), Catch::Contains("worker 1") && Catch::Contains("worker 0") &&
                                 Catch::Contains("different"));
  }
  CHECK_FALSE(c.is_registered(kW1));
  CHECK(c.on_register(kW1, worker_reg({10, 20}), t0));
  CHECK(c.is_registered(kW1));
  CHECK_FALSE(c.all_registered());
}

TEST_CASE("the memory cap counts a chunk no larger than the largest tensor", "[coordinator]") {
  // A chunk_bytes far above the model (or a whole-tensor mode) adds at most one tensor to a
  // server's share; it once added chunk_bytes and refused a 4 KB model over a 1 MiB cap.
  const auto t0 = Clock::now();
  RegisterLimits limits;
  limits.server_bytes = 1 << 20;
  for (const SchedulerConfig& sched : {chunked(1ull << 40), SchedulerConfig{}}) {
    Coordinator c(1, 1, sched, limits);
    REQUIRE(c.on_register(kS0, server_reg(1), t0));
    CHECK(c.on_register(kW0, worker_reg({1000, 24}), t0));
    Coordinator big(1, 1, sched, limits);
    REQUIRE(big.on_register(kS0, server_reg(1), t0));
    const Status st = big.on_register(kW0, worker_reg({200000, 100000}), t0);
    CHECK_FALSE(st);
    CHECK_THAT(st.message(), Catch::Contains("over the cap"));
  }
}

TEST_CASE("the membership lists every chunk exactly once", "[coordinator]") {
  const auto t0 = Clock::now();
  for (const auto& sched : {chunked(4096), chunked(1 << 20), SchedulerConfig{}}) {
    Coordinator c = full(t0, sched);
    const wire::Membership& m = c.membership();
    CHECK(m.num_servers() == 2);
    CHECK(m.num_workers() == 2);
    REQUIRE(m.server_addresses_size() == 2);
    CHECK(m.server_addresses(0) == "tcp://127.0.0.1:1");
    CHECK(m.server_addresses(1) == "tcp://127.0.0.1:2");
    REQUIRE(m.tensors_size() == int(kModel.size()));
    // Per tensor: the chunks tile [0, num_elements) without gap or overlap.
    std::map<uint32_t, std::map<uint64_t, uint64_t>> tiles;
    std::set<std::pair<uint32_t, uint64_t>> seen;
    for (const auto& ch : m.chunks()) {
      CHECK(ch.server() < 2);
      CHECK(ch.length() > 0);
      if (sched.mode == Mode::kPreemptive) CHECK(ch.length() * 4 <= sched.chunk_bytes);
      CHECK(seen.insert({ch.key(), ch.offset()}).second);
      tiles[ch.key()][ch.offset()] = ch.length();
    }
    for (std::size_t k = 0; k < kModel.size(); ++k) {
      INFO("tensor " << k);
      CHECK(m.tensors(int(k)).num_elements() == kModel[k]);
      uint64_t next = 0;
      for (const auto& [off, len] : tiles[uint32_t(k)]) {
        CHECK(off == next);
        next = off + len;
      }
      CHECK(next == kModel[k]);
    }
    // Computed once: a second call gives the same object.
    CHECK(&c.membership() == &m);
    // No registration after the membership went out: another process claiming a rank is refused
    // as rank-taken; a repeat from the holder changes nothing.
    const auto err = c.on_register(kW1, "w1.0123456789abcdef", worker_reg(kModel), t0);
    REQUIRE(err);
    CHECK(err->code == ErrorCode::kTaken);
    CHECK(c.on_register(kW1, worker_reg(kModel), t0));
    CHECK(&c.membership() == &m);
  }
}

TEST_CASE("missing() names the peers that have not registered or arrived", "[coordinator]") {
  const auto t0 = Clock::now();
  Coordinator c(2, 3, SchedulerConfig{});
  REQUIRE(c.on_register(kS0, server_reg(1), t0));
  REQUIRE(c.on_register(kW1, worker_reg({4}), t0));
  CHECK(c.missing("") == "server 1, worker 0, worker 2");
  REQUIRE(c.on_register(kS1, server_reg(2), t0));
  REQUIRE(c.on_register(kW0, worker_reg({4}), t0));
  REQUIRE(c.on_register({wire::WORKER, 2}, worker_reg({4}), t0));
  CHECK(c.missing("").empty());
  CHECK(c.missing("start") == "server 0, server 1, worker 0, worker 1, worker 2");
  CHECK_FALSE(c.arrive("start", kW1));
  CHECK(c.missing("start") == "server 0, server 1, worker 0, worker 2");
  // Only workers take part in the shutdown barrier.
  CHECK(c.missing("shutdown") == "worker 0, worker 1, worker 2");
}

TEST_CASE("a barrier completes with its last arrival", "[coordinator]") {
  const auto t0 = Clock::now();
  Coordinator c = full(t0);
  (void)c.membership();
  CHECK_FALSE(c.arrive("start", kS0));
  CHECK_FALSE(c.arrive("start", kW1));
  CHECK_FALSE(c.arrive("start", kW1));  // arriving twice counts once
  CHECK_FALSE(c.arrive("start", kS1));
  CHECK(c.missing("start") == "worker 0");
  CHECK(c.arrive("start", kW0));
  CHECK(c.missing("start").empty());
  // Shutdown: the workers only; servers wait for the release.
  CHECK_FALSE(c.arrive("shutdown", kW0));
  CHECK(c.arrive("shutdown", kW1));
}

TEST_CASE("lost() names a registered peer silent past the timeout", "[coordinator]") {
  const auto t0 = Clock::now();
  Coordinator c = full(t0);
  const auto timeout = std::chrono::duration_cast<Clock::duration>(1500ms);
  CHECK_FALSE(c.lost(t0 + 1s, timeout));
  c.seen(kS1, t0 + 1s);
  c.seen(kW0, t0 + 1s);
  // At t0 + 2 s only worker 1 was last heard from more than 1.5 s ago.
  const auto lost = c.lost(t0 + 2s, timeout);
  REQUIRE(lost);
  CHECK(*lost == kW1);
  CHECK(describe(*lost) == "worker 1");
  CHECK(c.silent_seconds(kW1, t0 + 2s) == Approx(2.0));
  c.seen(kW1, t0 + 2s);
  CHECK_FALSE(c.lost(t0 + 2s, timeout));
  // Server 0 is never lost to itself, however long since it registered.
  Coordinator solo(1, 1, SchedulerConfig{});
  REQUIRE(solo.on_register(kS0, server_reg(1), t0));
  CHECK_FALSE(solo.lost(t0 + 1h, timeout));
  // A peer that never registered is not tracked (it is what missing() reports).
  c.seen({wire::WORKER, 9}, t0 + 2s);
  CHECK_FALSE(c.is_registered({wire::WORKER, 9}));
}

namespace {

wire::Register resuming(int port, std::vector<uint64_t> checkpoints, bool resume = true) {
  wire::Register r = server_reg(port);
  r.set_resume(resume);
  for (uint64_t it : checkpoints) r.add_checkpoints(it);
  return r;
}

// The workers start as server 0 does, unless `worker_resume` says otherwise.
Coordinator with_servers(const wire::Register& s0, const wire::Register& s1,
                         std::optional<bool> worker_resume = std::nullopt) {
  const auto t0 = Clock::now();
  Coordinator c(2, 2, chunked(4096));
  REQUIRE(c.on_register(kS0, s0, t0));
  REQUIRE(c.on_register(kS1, s1, t0));
  wire::Register w = worker_reg(kModel);
  w.set_resume(worker_resume.value_or(s0.resume()));
  REQUIRE(c.on_register(kW0, w, t0));
  REQUIRE(c.on_register(kW1, w, t0));
  return c;
}

}  // namespace

TEST_CASE("resume: the membership names the newest checkpoint every server has", "[coordinator]") {
  auto c = with_servers(resuming(1, {10, 20, 30}), resuming(2, {20, 25}));
  const auto& m = c.membership();
  CHECK(m.resume());
  CHECK(m.resume_iteration() == 20);
  auto fresh = full(Clock::now());
  CHECK_FALSE(fresh.membership().resume());
}

TEST_CASE("resume: no common checkpoint or a server without --resume is refused, saying why",
          "[coordinator]") {
  auto none = with_servers(resuming(1, {10}), resuming(2, {15}));
  CHECK_THROWS_WITH(none.membership(),
                    Catch::Contains("no checkpoint iteration is common to every server") &&
                        Catch::Contains("server 1: 1 checkpoint(s) up to iteration 15"));
  auto mixed = with_servers(resuming(1, {10}), resuming(2, {10}, false));
  CHECK_THROWS_WITH(mixed.membership(),
                    Catch::Contains("server 1 was started without --resume, server 0 with it"));
  // Workers too: a fresh one deleted its codec state, a resuming one was ignored.
  auto fresh_workers = with_servers(resuming(1, {10}), resuming(2, {10}), false);
  CHECK_THROWS_WITH(fresh_workers.membership(),
                    Catch::Contains("worker 0 was started without --resume, server 0 with it"));
  auto resuming_workers = with_servers(resuming(1, {}, false), resuming(2, {}, false), true);
  CHECK_THROWS_WITH(resuming_workers.membership(),
                    Catch::Contains("worker 0 was started with --resume, server 0 without it"));
}

TEST_CASE("resume: a server that holds no chunk has no say in the resume point",
          "[coordinator]") {
  // It writes no checkpoint, so every resume of such a job found no common one.
  const auto t0 = Clock::now();
  const auto resumed = [&](std::vector<uint64_t> s0, std::vector<uint64_t> s1) {
    Coordinator c(2, 1, chunked(4096));
    REQUIRE(c.on_register(kS0, resuming(1, std::move(s0)), t0));
    REQUIRE(c.on_register(kS1, resuming(2, std::move(s1)), t0));
    wire::Register w = worker_reg({1});  // one chunk, on one server
    w.set_resume(true);
    REQUIRE(c.on_register(kW0, w, t0));
    return c;
  };
  auto probe = resumed({10}, {10});
  REQUIRE(probe.membership().chunks_size() == 1);
  const bool on_s0 = probe.membership().chunks(0).server() == 0;
  const std::vector<uint64_t> holder{10, 20}, none{};
  auto c = on_s0 ? resumed(holder, none) : resumed(none, holder);
  CHECK(c.membership().resume_iteration() == 20);
  auto lost = on_s0 ? resumed(none, holder) : resumed(holder, none);
  CHECK_THROWS_WITH(lost.membership(),
                    Catch::Contains("common to every server holding a chunk") &&
                        Catch::Contains("0 checkpoint(s)"));
}

TEST_CASE("worker 0's grouping plan reaches every worker, unusable ones are refused",
          "[coordinator]") {
  const auto t0 = Clock::now();
  Coordinator c(1, 2, chunked(4096));
  REQUIRE(c.on_register(kS0, server_reg(1), t0));
  wire::Register w0 = worker_reg(kModel);
  auto* plan = w0.mutable_grouping();
  plan->set_spec("auto");
  plan->set_search("9 simulations in 3 ms, from none");
  plan->set_trial_iterations(2);
  for (const auto& starts : {std::vector<uint32_t>{0, 2}, std::vector<uint32_t>{0}}) {
    auto* cand = plan->add_candidates();
    cand->set_name(starts.size() == 1 ? "size:4096" : "auto");
    for (uint32_t s : starts) cand->add_starts(s);
    cand->set_price_ms(12.5);
  }
  const auto refused = [&](auto&& spoil, const std::string& why) {
    wire::Register r = w0;
    spoil(*r.mutable_grouping());
    const Status st = c.on_register(kW0, r, t0);
    INFO(why);
    REQUIRE_FALSE(st);
    CHECK_THAT(st.message(), Catch::Contains("unusable grouping plan") && Catch::Contains(why));
  };
  using GP = wire::GroupingPlan;
  refused([](GP& p) { p.mutable_candidates(0)->set_starts(1, 4); }, "below 4, the model's");
  refused([](GP& p) { p.mutable_candidates(0)->set_starts(0, 1); }, "first group starting");
  refused([](GP& p) { p.mutable_candidates(1)->add_starts(0); }, "candidate 1 has group 1");
  refused([](GP& p) { p.mutable_candidates(0)->clear_starts(); }, "no groups");
  refused([](GP& p) { p.mutable_candidates(1)->set_price_ms(std::nan("")); }, "a price of");
  refused([](GP& p) { p.clear_candidates(); }, "0 candidates");
  refused([](GP& p) { p.set_trial_iterations(0); }, "0 trial iterations");
  refused([](GP& p) { p.set_search("x\ny"); }, "control character 0x0a");
  refused([](GP& p) { p.set_spec("size:lots"); }, "spec 'size:lots'");
  refused([](GP& p) { p.mutable_candidates(0)->set_name(std::string(2000, 'a')); }, "2000 bytes");
  refused([](GP& p) {
    for (int i = 0; i < kMaxGroupingCandidates; ++i) *p.add_candidates() = p.candidates(0);
  }, "18 candidates");
  REQUIRE(c.on_register(kW0, w0, t0));
  REQUIRE(c.on_register(kW1, worker_reg(kModel), t0));  // other workers send none
  const wire::Membership& m = c.membership();
  REQUIRE(m.has_grouping());
  CHECK(m.grouping().SerializeAsString() == w0.grouping().SerializeAsString());
}

TEST_CASE("resume: a worker's compression state does not hold the job back", "[coordinator]") {
  // Its writes failed from iteration 150 on, or it held an earlier run's files: the job was
  // refused, or resumed 200 iterations back and the servers' newer checkpoints were removed.
  // The servers hold 250 and 300, worker 1's state 250 and 300.
  const auto t0 = Clock::now();
  const auto resumed = [&](std::vector<uint64_t> w0_state) {
    Coordinator c(2, 2, chunked(4096));
    REQUIRE(c.on_register(kS0, resuming(1, {250, 300}), t0));
    REQUIRE(c.on_register(kS1, resuming(2, {250, 300}), t0));
    wire::Register w = worker_reg(kModel);
    w.set_resume(true);
    w.set_codec_state(true);
    w.add_checkpoints(250);
    w.add_checkpoints(300);
    REQUIRE(c.on_register(kW1, w, t0));
    w.clear_checkpoints();
    for (uint64_t it : w0_state) w.add_checkpoints(it);
    REQUIRE(c.on_register(kW0, w, t0));
    return c;
  };
  auto behind = resumed({50, 100});
  CHECK(behind.membership().resume_iteration() == 300);
  REQUIRE(behind.notes().size() == 1);
  CHECK_THAT(behind.notes()[0],
             Catch::Contains("worker 0 has no compression state of it (2 checkpoint(s) up to "
                             "iteration 100)") &&
                 Catch::Contains("restarts empty"));
  auto alike = resumed({250, 300});
  CHECK(alike.membership().resume_iteration() == 300);
  CHECK(alike.notes().empty());
  // One checkpoint back (its newest file corrupt) keeps the run bit for bit.
  auto one_back = resumed({200, 250});
  CHECK(one_back.membership().resume_iteration() == 250);
  CHECK(one_back.notes().empty());
}
