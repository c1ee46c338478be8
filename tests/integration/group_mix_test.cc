// Workers that group differently (GradOptimizer, scheduler/grouping.h) against a real psrt-server,
// driven by two raw clients: in the same iteration one pushes a chunk in a group and the other
// alone or in another group. Each gets its replies grouped as its own pushes were, with the
// aggregate of both workers' gradients, every push is acknowledged, and the job goes on to a
// clean shutdown (no reply shaped for the other worker, which this worker would wait on for ever).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <set>

#include "core/group_frames.h"
#include "tests/integration/raw_group.h"
#include "tests/integration/raw_job.h"

using namespace psrt;
using namespace psrt::test;

namespace {

const std::vector<uint64_t> kSizes{10, 30, 3000, 20};  // fifo, one server: one chunk per tensor
constexpr float kLr = 0.5f;

// One worker's pushes in one iteration: each entry is a group of keys (one key: pushed alone).
using Shape = std::vector<std::vector<uint32_t>>;

struct Sent {
  std::map<uint32_t, std::vector<float>> grads;  // by key
  std::set<uint64_t> seqs;                       // of the pushes
};

Sent push_shape(RawClient& w, const Shape& shape, uint64_t iteration, std::mt19937& rng) {
  Sent sent;
  for (const auto& keys : shape) {
    RawGroup g = group_push(w, kSizes, keys, iteration, rng);
    if (keys.size() == 1) g.header.clear_members();  // a push of its own: one frame
    for (std::size_t i = 0; i < keys.size(); ++i) sent.grads[keys[i]] = g.grads[i];
    sent.seqs.insert(g.header.seq());
    w.send(g.header, g.frames());
  }
  return sent;
}

struct Received {
  std::vector<Reply> params;
  std::set<uint64_t> acked;  // by ACKs, and by the replies' acks (Header.acks)
};

// The keys a reply holds (a group's or a batch's members, ascending; or its own key).
std::vector<uint32_t> keys_of(const Reply& p) {
  std::vector<uint32_t> keys;
  for (const auto& m : p.header.members()) keys.push_back(m.key());
  if (keys.empty()) keys.push_back(p.header.key());
  return keys;
}

// Reads until every tensor's reply and the ACK of every push in `pushes` have come (10 s each
// at most, or the test fails with the server's output); acknowledges each reply.
Received receive(RawClient& w, ServerProc& s, const std::set<uint64_t>& pushes) {
  Received r;
  std::size_t keys = 0;
  const auto acked_all = [&] {
    return std::includes(r.acked.begin(), r.acked.end(), pushes.begin(), pushes.end());
  };
  while (keys < kSizes.size() || !acked_all()) {
    std::optional<Reply> m = w.recv();
    if (!m) FAIL("no reply in 10 s; the server says:\n" << s.proc->output());
    INFO(wire::MsgType_Name(m->header.type()));
    REQUIRE((m->header.type() == wire::ACK || m->header.type() == wire::PARAMS));
    // An ACK acknowledges its seq and those it lists (Header.acks); a reply those it lists.
    for (uint64_t seq : m->header.acks()) r.acked.insert(seq);
    if (m->header.type() == wire::ACK) {
      r.acked.insert(m->header.seq());
      continue;
    }
    wire::Header back = w.tensor(wire::ACK, m->header.key(), m->header.offset(),
                                 m->header.length(), m->header.iteration());
    back.set_seq(m->header.seq());
    w.send(back);
    keys += keys_of(*m).size();
    r.params.push_back(std::move(*m));
  }
  return r;
}

// Each group the worker pushed came back as one reply holding exactly its members; every key
// came back once (what was pushed alone may come alone or in a batch of such replies).
void check_shape(const Received& r, const Shape& pushed) {
  std::multiset<uint32_t> all;
  std::set<std::vector<uint32_t>> replies;
  for (const Reply& p : r.params) {
    const auto keys = keys_of(p);
    all.insert(keys.begin(), keys.end());
    replies.insert(keys);
  }
  CHECK(all.size() == kSizes.size());
  for (uint32_t k = 0; k < kSizes.size(); ++k) CHECK(all.count(k) == 1);
  for (auto keys : pushed) {
    if (keys.size() < 2) continue;
    std::sort(keys.begin(), keys.end());
    CHECK(replies.count(keys) == 1);
  }
}

// Every reply holds params[key] for each of its keys, at `iteration`.
void check_values(const Received& r, const std::vector<std::vector<float>>& params,
                  uint64_t iteration) {
  for (const Reply& p : r.params) {
    CHECK(p.header.iteration() == iteration);
    std::vector<std::span<const uint8_t>> bytes;
    std::vector<uint32_t> keys;
    if (p.header.members_size() == 0) {
      REQUIRE(p.payload.size() == 1);
      bytes.emplace_back(static_cast<const uint8_t*>(p.payload[0].data()), p.payload[0].size());
      keys.push_back(p.header.key());
    } else {
      member_payloads(p.header, p.payload, bytes);
      for (const auto& m : p.header.members()) keys.push_back(m.key());
    }
    for (std::size_t i = 0; i < keys.size(); ++i) {
      const auto& want = params.at(keys[i]);
      REQUIRE(bytes[i].size() == want.size() * sizeof(float));
      std::vector<float> got(want.size());
      std::memcpy(got.data(), bytes[i].data(), bytes[i].size());
      CHECK(got == want);
    }
  }
}

}  // namespace

TEST_CASE("workers that group a chunk differently each get replies grouped as they pushed",
          "[integration][grouping]") {
  ServerProc s(raw_job_yaml(2));
  zmq::context_t ctx(1);
  RawClient w0(ctx, s.endpoint, "w0", Sender{wire::WORKER, 0, "rawjob"});
  RawClient w1(ctx, s.endpoint, "w1", Sender{wire::WORKER, 1, "rawjob"});
  std::mt19937 rng(91);
  auto params = start_job({&w0, &w1}, rng, kSizes);

  // Per iteration: who pushes first, and each worker's shape. The first pusher's pushes are all
  // acknowledged before the second pushes, so the second's complete the chunks.
  struct Round {
    Shape first, second;
    bool w0_first;
  };
  const std::vector<Round> rounds{
      {{{0, 1, 2, 3}}, {{0, 1}, {2}, {3}}, true},
      {{{0, 1, 2, 3}}, {{0}, {1}, {2, 3}}, false},
      {{{3, 0}, {1, 2}}, {{0, 1, 2}, {3}}, true},
      {{{0, 1, 2, 3}}, {{0, 1, 2, 3}}, false},  // alike again
  };
  for (uint64_t it = 0; it < rounds.size(); ++it) {
    const Round& round = rounds[it];
    RawClient& a = round.w0_first ? w0 : w1;
    RawClient& b = round.w0_first ? w1 : w0;
    INFO("iteration " << it);
    const Sent sa = push_shape(a, round.first, it, rng);
    std::set<uint64_t> acked_a;
    for (std::size_t i = 0; i < sa.seqs.size(); ++i) {
      acked_a.insert(expect(a, wire::ACK).header.seq());
    }
    CHECK(acked_a == sa.seqs);
    const Sent sb = push_shape(b, round.second, it, rng);
    for (uint32_t k = 0; k < kSizes.size(); ++k) {
      const auto& ga = sa.grads.at(k);
      const auto& gb = sb.grads.at(k);
      for (std::size_t e = 0; e < params[k].size(); ++e) {
        params[k][e] -= kLr * ((ga[e] + gb[e]) * 0.5f);
      }
    }
    const Received ra = receive(a, s, {});  // its pushes are acknowledged above
    const Received rb = receive(b, s, sb.seqs);
    check_shape(ra, round.first);
    check_shape(rb, round.second);
    check_values(ra, params, it + 1);
    check_values(rb, params, it + 1);
  }
  still_running(s);
  CHECK_THAT(s.proc->output(), !Catch::Contains("rejected"));
  shutdown_and_exit({&w0, &w1}, s);
}
