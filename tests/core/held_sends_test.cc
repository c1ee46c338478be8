// Messages that meet a full queue are held and sent in order as room comes (core/held_sends.h):
// ZeroMQ dropped them at the high-water mark, nothing sent them again, and a job whose links had
// more messages in flight than the mark stalled.
#include "core/held_sends.h"

#include <catch2/catch.hpp>

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "core/messenger.h"
#include "core/transport.h"

using namespace psrt;
using namespace std::chrono_literals;

namespace {

wire::Header numbered(uint64_t n) {
  wire::Header h = make_header(Sender{wire::SERVER, 0, "held"}, wire::HEARTBEAT);
  h.set_iteration(n);
  return h;
}

std::vector<zmq::message_t> frames(std::size_t bytes) {
  std::vector<zmq::message_t> out;
  out.emplace_back(bytes);
  return out;
}

}  // namespace

TEST_CASE("held messages go in order per peer, as far as room allows", "[core]") {
  HeldSends held(std::size_t(1) << 20);
  for (uint64_t n = 0; n < 5; ++n) {
    auto p = frames(10);
    REQUIRE(held.hold("a", numbered(n), p));
    CHECK(p.empty());  // taken
  }
  auto p = frames(10);
  REQUIRE(held.hold("b", numbered(100), p));
  CHECK(held.holds("a"));
  CHECK(held.messages() == 6);

  std::map<std::string, std::vector<uint64_t>> got;
  std::size_t room = 3;  // peer "a" takes three, then its queue is full again
  const auto send = [&](const std::string& peer, const wire::Header& h,
                        std::vector<zmq::message_t>& payload, bool* full) {
    CHECK(payload.size() == 1);
    if (peer == "a" && room == 0) return !(*full = true);
    if (peer == "a") --room;
    got[peer].push_back(h.iteration());
    return true;
  };
  CHECK(held.flush(send) == 4);
  CHECK(got["a"] == std::vector<uint64_t>{0, 1, 2});
  CHECK(got["b"] == std::vector<uint64_t>{100});
  CHECK_FALSE(held.holds("b"));
  room = 100;
  CHECK(held.flush(send) == 2);
  CHECK(got["a"] == std::vector<uint64_t>{0, 1, 2, 3, 4});
  CHECK(held.empty());
}

TEST_CASE("a gone peer loses what is held for it, and a peer's hold is bounded", "[core]") {
  HeldSends held(std::size_t(1) << 20);
  for (uint64_t n = 0; n < 3; ++n) {
    auto p = frames(10);
    REQUIRE(held.hold("gone", numbered(n), p));
  }
  const auto unreachable = [](const std::string&, const wire::Header&,
                              std::vector<zmq::message_t>&, bool* full) {
    *full = false;
    return false;
  };
  CHECK(held.flush(unreachable) == 0);
  CHECK(held.empty());
  CHECK(held.lost_to_gone_peers() == 3);

  // One message over the cap is held when nothing else is; the next is refused and kept by
  // its sender.
  auto big = frames(std::size_t(1) << 20);
  CHECK(held.hold("slow", numbered(0), big));
  auto more = frames(10);
  CHECK_FALSE(held.hold("slow", numbered(1), more));
  CHECK(more.size() == 1);
  CHECK(held.messages() == 1);
}

TEST_CASE("a Messenger holds what meets a full queue and delivers every message in order",
          "[core]") {
  zmq::context_t ctx(1);
  Metrics metrics = Metrics::off();
  LogLimiter log{10};
  SocketOptions options;
  options.hwm = 10;
  Messenger sender("held", options, metrics, log, &ctx);
  const Messenger::LinkId dealer = sender.add_dealer("the reader", "sender-0");
  zmq::socket_t reader = make_router(ctx, options);
  reader.bind("inproc://held");
  sender.socket(dealer).connect("inproc://held");

  constexpr uint64_t kMessages = 500;  // far past the two ends' marks (10 each)
  for (uint64_t n = 0; n < kMessages; ++n) {
    REQUIRE(sender.send(dealer, nullptr, numbered(n)));
  }
  CHECK(sender.held_messages() > kMessages / 2);

  std::vector<uint64_t> got;
  Envelope env;
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (got.size() < kMessages && std::chrono::steady_clock::now() < deadline) {
    while (recv_envelope(reader, env, true)) {
      wire::Header h;
      WireError err;
      const bool decoded = decode_header(env.header, env.payload, "held", h, err);
      INFO(err.message);
      REQUIRE(decoded);
      got.push_back(h.iteration());
    }
    int passes = 0;  // one pass of the sender's loop: it sends what now has room
    Messenger::Loop loop;
    loop.done = [&] { return passes > 0; };
    loop.tick = [](Messenger::Clock::time_point now) { return now + 1ms; };
    loop.passed = [&] { ++passes; };
    sender.run(loop);
  }
  REQUIRE(got.size() == kMessages);
  for (uint64_t n = 0; n < kMessages; ++n) CHECK(got[n] == n);
  CHECK(sender.held_messages() == 0);
}
