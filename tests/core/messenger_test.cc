// The Messenger's poll loop waits on each socket's ZMQ_FD and asks a socket for input only when
// something may have hidden it from that fd. These cases set up exactly such a hidden message
// (a send takes in the command that announced a reply) and check that the loop still reads it in
// the pass that follows, without waiting for anything else to arrive.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <random>
#include <string>
#include <thread>

#include "core/messenger.h"
#include "core/transport.h"
#include "core/wire.h"

using namespace psrt;
using namespace std::chrono_literals;

namespace {

const std::string kJob = "messenger-test";

Sender who(wire::Role role) { return Sender{role, 0, kJob}; }

// A server-side echo on a ROUTER in its own thread: every HEARTBEAT gets one back.
struct Echo {
  Metrics metrics = Metrics::off();
  LogLimiter log{10};
  Messenger messenger{kJob, {}, metrics, log};
  Messenger::LinkId router = messenger.add_router("the test's dealer");
  std::string endpoint = bind_endpoint(messenger.socket(router), "tcp://127.0.0.1:0");
  std::atomic<bool> stop{false};
  std::thread thread;

  Echo() {
    messenger.on(router, wire::HEARTBEAT, [this](Inbound& m) {
      wire::Header h = make_header(who(wire::SERVER), wire::HEARTBEAT);
      h.set_iteration(m.header.iteration());
      messenger.send(router, &m.identity, h);
    });
    thread = std::thread([this] {
      Messenger::Loop loop;
      loop.done = [this] { return stop.load(); };
      loop.tick = [](Messenger::Clock::time_point now) { return now + 20ms; };
      messenger.run(loop);
    });
  }
  ~Echo() {
    stop = true;
    thread.join();
  }
};

struct Client {
  Metrics metrics = Metrics::off();
  LogLimiter log{10};
  Messenger messenger{kJob, {}, metrics, log};
  Messenger::LinkId dealer = messenger.add_dealer("the echo", "client-0");
  std::vector<uint64_t> replies;

  explicit Client(const std::string& endpoint) {
    messenger.socket(dealer).connect(endpoint);
    messenger.on(dealer, wire::HEARTBEAT,
                 [this](Inbound& m) { replies.push_back(m.header.iteration()); });
  }
  void send(uint64_t n) {
    wire::Header h = make_header(who(wire::WORKER), wire::HEARTBEAT);
    h.set_iteration(n);
    REQUIRE(messenger.send(dealer, nullptr, h));
  }
  // Runs passes until `want` replies arrived or `passes` passes ran; each pass may wait up to
  // `patience` for input. Returns the passes run.
  int run(std::size_t want, int passes, Messenger::Clock::duration patience) {
    int ran = 0;
    Messenger::Loop loop;
    loop.done = [&] { return replies.size() >= want || ran >= passes; };
    loop.tick = [&](Messenger::Clock::time_point now) { return now + patience; };
    loop.passed = [&] { ++ran; };
    messenger.run(loop);
    return ran;
  }
};

}  // namespace

TEST_CASE("a reply whose announcement a send took in is read in the next pass") {
  Echo echo;
  Client client(echo.endpoint);
  client.send(1);
  REQUIRE(client.run(1, 1000, 5s) < 1000);  // connected, the first reply read
  REQUIRE(client.replies == std::vector<uint64_t>{1});
  // A pass that finds the socket empty: the next reply must announce itself.
  client.run(2, 1, 10ms);

  client.send(2);
  std::this_thread::sleep_for(200ms);  // the echo replies; its announcement waits in our mailbox
  client.send(3);  // takes that announcement in (libzmq throttles it to once a millisecond)
  // The reply to 2 now waits with the socket's fd quiet, and the reply to 3 joins the same pipe
  // without a new announcement. One pass, willing to wait a long time, must read both.
  std::this_thread::sleep_for(200ms);
  const int passes = client.run(3, 1, 10s);
  CHECK(passes <= 1);
  CHECK(client.replies == std::vector<uint64_t>{1, 2, 3});
}

TEST_CASE("a loop with nothing pending still wakes for a message that arrives later") {
  Echo echo;
  Client client(echo.endpoint);
  client.send(1);
  REQUIRE(client.run(1, 1000, 5s) < 1000);
  // Every link is read to the end now; the next reply can only announce itself through the fd.
  std::thread later([&] {
    std::this_thread::sleep_for(100ms);
    client.messenger.wakeup().notify();
  });
  std::atomic<bool> sent{false};
  Messenger::Loop loop;
  int woken = 0;
  int passes = 0;
  loop.done = [&] { return client.replies.size() >= 2 || passes >= 4; };
  loop.tick = [](Messenger::Clock::time_point now) { return now + 10s; };
  loop.passed = [&] { ++passes; };
  loop.woken = [&] {
    ++woken;
    if (!sent.exchange(true)) client.send(2);
  };
  client.messenger.run(loop);
  later.join();
  CHECK(woken == 1);
  CHECK(client.replies == std::vector<uint64_t>{1, 2});
}

TEST_CASE("traffic on several sockets, sent from handlers and wake-ups, never stalls the loop") {
  // Three links to two echoes; every reply may trigger sends on any link, and another thread's
  // wake-ups send too, so sends keep taking in other replies' announcements at random moments.
  // A reply hidden from its fd would stall the loop until its timer (10 s); none may.
  Echo a, b;
  Metrics metrics = Metrics::off();
  LogLimiter log{10};
  Messenger m{kJob, {}, metrics, log};
  std::vector<Messenger::LinkId> links = {m.add_dealer("echo a", "c-0"),
                                          m.add_dealer("echo a again", "c-1"),
                                          m.add_dealer("echo b", "c-2")};
  m.socket(links[0]).connect(a.endpoint);
  m.socket(links[1]).connect(a.endpoint);
  m.socket(links[2]).connect(b.endpoint);
  constexpr int kMessages = 3000;
  int sent = 0, received = 0, stalls = 0;
  std::mt19937 rng(7);
  const auto send_some = [&](int most) {
    const int n = std::uniform_int_distribution<int>(0, most)(rng);
    for (int i = 0; i < n && sent < kMessages; ++i) {
      wire::Header h = make_header(who(wire::WORKER), wire::HEARTBEAT);
      h.set_iteration(uint64_t(++sent));
      REQUIRE(m.send(links[rng() % links.size()], nullptr, h));
    }
  };
  for (auto link : links) {
    m.on(link, wire::HEARTBEAT, [&](Inbound&) {
      ++received;
      send_some(2);
    });
  }
  std::atomic<bool> over{false};
  std::thread waker([&] {
    std::mt19937 pause(11);
    while (!over) {
      std::this_thread::sleep_for(std::chrono::microseconds(200 + pause() % 300));
      m.wakeup().notify();
    }
  });
  Messenger::Loop loop;
  Messenger::Clock::time_point deadline{};
  loop.done = [&] { return (sent == kMessages && received == sent) || stalls > 0; };
  loop.tick = [&](Messenger::Clock::time_point now) {
    if (deadline != Messenger::Clock::time_point{} && now >= deadline) ++stalls;
    deadline = now + 10s;
    return deadline;
  };
  loop.woken = [&] { send_some(3); };
  send_some(8);
  m.run(loop);
  over = true;
  waker.join();
  CHECK(stalls == 0);
  CHECK(sent == kMessages);
  CHECK(received == kMessages);
}
