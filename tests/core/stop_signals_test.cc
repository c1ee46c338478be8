// StopSignals (core/stop_signals.h): the first stop signal reaches the daemon's `stop`, and the
// stop stays bounded: a declined stop, a second signal or a process still running after the grace
// end it by the signal's default action. The cases that end a process run in a forked child.
#include <catch2/catch.hpp>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "core/stop_signals.h"

using psrt::StopSignals;

namespace {

// Runs `body` in a child process; returns its wait status once it has ended (at most 30 s).
std::optional<int> in_child(void (*body)()) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    body();
    std::_Exit(0);
  }
  for (int i = 0; i < 3000; ++i) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) return status;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  return std::nullopt;
}

bool killed_by(const std::optional<int>& status, int sig) {
  return status && WIFSIGNALED(*status) && WTERMSIG(*status) == sig;
}

}  // namespace

TEST_CASE("the first stop signal reaches stop, with its name, once", "[stop_signals]") {
  std::mutex mu;
  std::condition_variable cv;
  std::optional<std::string> got;
  int calls = 0;
  {
    StopSignals stop("test", [&](const std::string& sig) {
      std::lock_guard lock(mu);
      got = sig;
      ++calls;
      cv.notify_all();
      return true;
    }, 60);
    ::kill(::getpid(), SIGHUP);
    std::unique_lock lock(mu);
    REQUIRE(cv.wait_for(lock, std::chrono::seconds(20), [&] { return got.has_value(); }));
  }  // the destructor ends the grace: the process goes on
  CHECK(*got == "SIGHUP");
  CHECK(calls == 1);
  // The former action is back.
  struct sigaction now {};
  ::sigaction(SIGHUP, nullptr, &now);
  CHECK(now.sa_handler == SIG_DFL);
}

TEST_CASE("an ignored SIGINT stays ignored", "[stop_signals]") {
  struct sigaction before {};
  ::sigaction(SIGINT, nullptr, &before);
  ::signal(SIGINT, SIG_IGN);
  {
    StopSignals stop("test", [](const std::string&) { return true; });
    struct sigaction now {};
    ::sigaction(SIGINT, nullptr, &now);
    CHECK(now.sa_handler == SIG_IGN);
    ::sigaction(SIGTERM, nullptr, &now);
    CHECK(now.sa_handler != SIG_DFL);  // caught
  }
  ::sigaction(SIGINT, &before, nullptr);
}

TEST_CASE("only one StopSignals at a time", "[stop_signals]") {
  StopSignals first("test", [](const std::string&) { return true; });
  CHECK_THROWS_AS(StopSignals("test", [](const std::string&) { return true; }), std::logic_error);
}

TEST_CASE("a declined stop ends the process by the signal", "[stop_signals]") {
  const auto status = in_child([] {
    StopSignals stop("test", [](const std::string&) { return false; }, 60);
    ::kill(::getpid(), SIGTERM);
    for (;;) ::pause();
  });
  CHECK(killed_by(status, SIGTERM));
}

TEST_CASE("a process still running after the grace ends by the signal", "[stop_signals]") {
  const auto status = in_child([] {
    StopSignals stop("test", [](const std::string&) { return true; }, 0.2);
    ::kill(::getpid(), SIGTERM);
    for (;;) ::pause();
  });
  CHECK(killed_by(status, SIGTERM));
}

TEST_CASE("a second signal ends the process at once", "[stop_signals]") {
  const auto status = in_child([] {
    StopSignals stop("test", [](const std::string&) { return true; }, 600);
    ::kill(::getpid(), SIGTERM);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ::kill(::getpid(), SIGHUP);
    for (;;) ::pause();
  });
  // Either signal's default action ended it, not the 600 s grace (the wait gives up at 30 s).
  REQUIRE(status);
  CHECK(WIFSIGNALED(*status));
}

TEST_CASE("a signal to a thread that blocks it is taken all the same", "[stop_signals]") {
  std::mutex mu;
  std::condition_variable cv;
  bool got = false;
  StopSignals stop("test", [&](const std::string&) {
    std::lock_guard lock(mu);
    got = true;
    cv.notify_all();
    return true;
  }, 60);
  // This thread blocks them too: only the waiting thread is left to take the signal.
  sigset_t before;
  ::pthread_sigmask(SIG_SETMASK, nullptr, &before);
  StopSignals::block_in_this_thread();
  std::thread io([] {
    StopSignals::block_in_this_thread();
    ::kill(::getpid(), SIGHUP);  // process-directed
  });
  io.join();
  {
    std::unique_lock lock(mu);
    CHECK(cv.wait_for(lock, std::chrono::seconds(20), [&] { return got; }));
  }
  ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
}

TEST_CASE("a target takes the signals while it lives, then the one before it", "[stop_signals]") {
  std::mutex mu;
  std::condition_variable cv;
  std::string got;
  const auto record = [&](const std::string& who) {
    return [&, who](const std::string&) {
      std::lock_guard lock(mu);
      got = who;
      cv.notify_all();
      return true;
    };
  };
  StopSignals stop("test", record("first"), 60);
  {
    StopSignals::Target target(stop, record("second"));
    ::kill(::getpid(), SIGHUP);
    std::unique_lock lock(mu);
    REQUIRE(cv.wait_for(lock, std::chrono::seconds(20), [&] { return !got.empty(); }));
  }
  CHECK(got == "second");
}
