// timeline: each process writes its Chrome-trace file; psrt-timeline merge joins them.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <thread>

#include "tests/integration/proc_util.h"

using namespace psrt;
using namespace std::chrono_literals;

namespace {

std::map<std::string, int> count_events(const std::string& path, int& lines) {
  std::ifstream in(path);
  std::string line;
  std::map<std::string, int> by_phase;
  lines = 0;
  std::getline(in, line);
  REQUIRE(line.rfind("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[", 0) == 0);
  while (std::getline(in, line)) {
    if (line == "]}") break;
    ++lines;
    REQUIRE(line.rfind("{\"ph\":\"", 0) == 0);
    REQUIRE((line.back() == '}' || line.substr(line.size() - 2) == "},"));
    by_phase[line.substr(7, 1)]++;
    for (const char* cat : {"forward", "backward", "wait", "push", "update", "params"}) {
      if (line.find(std::string("\"cat\":\"") + cat + "\"") != std::string::npos) by_phase[cat]++;
    }
  }
  return by_phase;
}

// Whether the file at `path` is JSON a strict reader takes (Python's).
bool parses_as_json(const std::string& path) {
  return std::system(("/usr/bin/python3 -m json.tool " + path + " > /dev/null").c_str()) == 0;
}

// 2 servers, 2 workers training a small MLP, timelines in DIR/trace. Returns the job file.
std::string mlp_job(const std::string& dir, const std::string& job, const std::string& extra = "") {
  const std::string cfg = dir + "/job.yaml";
  test::write_file(cfg, "job: {id: tl, batch_size: 16, evaluate: false, " + job + "}\n" +
                            "cluster: {servers: 2, workers: 2}\n"
                            "model: {backend: native, arch: mlp, hidden: [32]}\n"
                            "data: {train_limit: 500}\n" +
                            extra + "timeline: " + dir + "/trace\n");
  return cfg;
}

}  // namespace

TEST_CASE("every process writes a timeline and psrt-timeline merges them", "[integration]") {
  const std::string dir = test::temp_dir("timeline");
  const std::string cfg = mlp_job(dir, "iterations: 4, log_every: 0",
                                   "scheduler: {mode: preemptive, chunk_bytes: 8192}\n");
  test::Proc launch("launch", {test::bin("psrt-launch"), cfg});
  REQUIRE(launch.wait_exit(120) == 0);
  for (const char* f : {"server-0", "server-1", "worker-0", "worker-1"}) {
    CHECK(std::filesystem::exists(dir + "/trace/" + f + ".json"));
  }
  test::Proc merge(
      "merge", {test::bin("psrt-timeline"), "merge", dir + "/trace", "-o", dir + "/merged.json"});
  REQUIRE(merge.wait_exit(30) == 0);
  int lines = 0;
  auto n = count_events(dir + "/merged.json", lines);
  CHECK(lines > 50);
  CHECK(n["M"] == 4 * 6);   // process name, sort index and 4 track names per process
  CHECK(n["b"] == n["e"]);  // every chunk in flight begins and ends
  CHECK(n["b"] > 0);
  CHECK(n["forward"] == 2 * 4 * 4);  // 2 workers x 4 iterations x 4 layers (fc, relu, fc, loss)
  CHECK(n["backward"] == n["forward"]);
  CHECK(n["update"] > 0);
  CHECK(n["params"] > 0);

  // Merged again with the earlier merge in the folder, a file named twice, and a copy cut in
  // the middle of a line, with CRLF line ends: the same events, and a trace that still parses
  // (before: every event twice, and a half line or a double comma in the output).
  const std::string cut = dir + "/trace/worker-1-copy.json";
  std::ifstream whole(dir + "/trace/worker-1.json");
  std::string text((std::istreambuf_iterator<char>(whole)), std::istreambuf_iterator<char>());
  // Cut in the middle of the line that holds the file's middle (half the file could end at a
  // line's end, and then nothing was cut: the check below failed one run in ten).
  const std::size_t line_start = text.rfind('\n', text.size() / 2) + 1;
  const std::size_t line_end = text.find('\n', line_start);
  REQUIRE(line_end != std::string::npos);
  REQUIRE(line_end - line_start > 2);
  std::string crlf;
  for (char ch : text.substr(0, line_start + (line_end - line_start) / 2))
    crlf += ch == '\n' ? std::string("\r\n") : std::string(1, ch);
  test::write_file(cut, crlf);
  std::filesystem::copy_file(dir + "/merged.json", dir + "/trace/merged-before.json");
  test::Proc again("merge", {test::bin("psrt-timeline"), "merge", dir + "/trace",
                             dir + "/trace/worker-0.json", "-o", dir + "/again.json"});
  REQUIRE(again.wait_exit(30) == 0);
  CHECK_THAT(again.output(), Catch::Contains("skipped " + dir +
                                             "/trace/merged-before.json: a "
                                             "merged trace"));
  CHECK_THAT(again.output(), Catch::Contains("worker-1-copy.json: skipped 1 event line(s) cut"));
  int again_lines = 0;
  CHECK(count_events(dir + "/again.json", again_lines) == n);
  CHECK(again_lines == lines);
  CHECK(parses_as_json(dir + "/again.json"));

  test::Proc bad("merge", {test::bin("psrt-timeline"), "merge", cfg, "-o", dir + "/x.json"});
  CHECK(bad.wait_exit(30) == 2);
  CHECK(bad.output().find("not a psrt timeline file") != std::string::npos);
}

TEST_CASE("psrt-timeline merge refuses to overwrite one process's trace", "[integration]") {
  // `-o tl/worker-0.json`: the file was left out of the merge and overwritten with the others.
  const std::string dir = test::temp_dir("timeline");
  const std::string trace = dir + "/worker-0.json";
  const std::string text = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n"
                           "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,\"args\":{\"name\":"
                           "\"worker 0\"}},\n{\"ph\":\"X\",\"name\":\"push\",\"pid\":1,\"tid\":1,"
                           "\"ts\":1,\"dur\":2}\n]}\n";
  test::write_file(trace, text);
  test::write_file(dir + "/server-0.json", text);
  test::Proc merge("merge", {test::bin("psrt-timeline"), "merge", dir, "-o", trace});
  const auto rc = merge.wait_exit(30);
  INFO(merge.output());
  CHECK(rc == 2);
  CHECK_THAT(merge.output(), Catch::Contains("holds one process's trace"));
  std::ifstream in(trace);
  CHECK(std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()) ==
        text);
  // Named as an input file: worker 0's own trace was overwritten (exit 0).
  test::Proc named(
      "merge", {test::bin("psrt-timeline"), "merge", dir + "/server-0.json", trace, "-o", trace});
  CHECK(named.wait_exit(30) == 2);
  CHECK_THAT(named.output(), Catch::Contains("is also an input: not overwritten"));
  // A link loop among the inputs, and a bad flag: one line and exit 2 (the loop ended in
  // std::terminate, the flag in exit 106).
  std::filesystem::create_symlink("loop-b", dir + "/loop-a");
  std::filesystem::create_symlink("loop-a", dir + "/loop-b");
  test::Proc loop("merge",
                  {test::bin("psrt-timeline"), "merge", dir + "/loop-a", "-o", dir + "/l.out"});
  CHECK(loop.wait_exit(30) == 2);
  CHECK_THAT(loop.output(), Catch::Contains("loop-a: cannot open"));
  test::Proc flag("merge", {test::bin("psrt-timeline"), "merge", "--bogus", dir});
  CHECK(flag.wait_exit(30) == 2);
  CHECK_THAT(flag.output(), Catch::Contains("psrt-timeline: "));
  std::filesystem::remove(dir + "/loop-a");
  std::filesystem::remove(dir + "/loop-b");
  CHECK(std::string((std::istreambuf_iterator<char>(std::ifstream(trace).rdbuf())),
                    std::istreambuf_iterator<char>()) == text);
  // Elsewhere the output is replaced, an earlier one-file merge too; a FIFO is written, not read
  // first (that blocked for ever).
  for (int run = 0; run < 2; ++run) {
    test::Proc again("merge", {test::bin("psrt-timeline"), "merge", trace, "-o", dir + "/w0.out"});
    CHECK(again.wait_exit(30) == 0);
  }
  // A FIFO among the folder's traces is skipped (the merge blocked on it for ever).
  REQUIRE(::mkfifo((dir + "/zz.json").c_str(), 0600) == 0);
  test::Proc with_fifo("merge", {test::bin("psrt-timeline"), "merge", dir, "-o", dir + "/f.out"});
  CHECK(with_fifo.wait_exit(30) == 0);
  std::filesystem::remove(dir + "/zz.json");
  test::Proc fifo("merge", {"/bin/bash", "-c",
                            "mkfifo " + dir + "/fifo && { cat " + dir + "/fifo > " + dir +
                                "/from-fifo & } && " + test::bin("psrt-timeline") + " merge " +
                                dir + " -o " + dir + "/fifo && wait"});
  CHECK(fifo.wait_exit(30) == 0);
  CHECK(std::filesystem::file_size(dir + "/from-fifo") > 0);
}

TEST_CASE("psrt-timeline merge skips a line cut short after an inner brace", "[integration]") {
  // The line ended in '}', so it was taken: the merge exited 0 with a trace no reader parses.
  const std::string dir = test::temp_dir("timeline");
  const std::string head = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  const std::string name = "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,\"args\":{\"name\":"
                           "\"worker 0\"}},\n";
  const std::string push = "{\"ph\":\"X\",\"name\":\"push \\\"}\\\"\",\"pid\":1,\"tid\":1,"
                           "\"ts\":1,\"dur\":2,\"args\":{\"bytes\":[1,2]}}";
  test::write_file(dir + "/worker-0.json", head + name + push + "\n]}\n");
  // Cut after the inner '}' of args, and after a '}' inside a string.
  test::write_file(dir + "/worker-1.json", head + name + push.substr(0, push.size() - 1));
  test::write_file(dir + "/worker-2.json", head + name + push.substr(0, push.find("}\\\"") + 1));
  test::Proc merge("merge", {test::bin("psrt-timeline"), "merge", dir, "-o", dir + "/all.out"});
  REQUIRE(merge.wait_exit(30) == 0);
  INFO(merge.output());
  CHECK_THAT(merge.output(), Catch::Contains("worker-1.json: skipped 1 event line(s) cut"));
  CHECK_THAT(merge.output(), Catch::Contains("worker-2.json: skipped 1 event line(s) cut"));
  CHECK(parses_as_json(dir + "/all.out"));
}

TEST_CASE("a job stopped by Ctrl-C still writes every process's timeline", "[integration]") {
  // psrt-launch's SIGTERM reached processes already ending on a peer's abort: they declined it,
  // or their stop target was gone while their timeline was written, and died by it (one file
  // lost in 4 runs of 6 with Ctrl-C; in 3 of 6 with SIGTERM to every process at once).
  const std::string dir = test::temp_dir("timeline");
  const std::string cfg = mlp_job(dir, "iterations: 1000000, log_every: 50");
  const auto every_file = [&](const std::string& output) {
    INFO(output);
    for (const char* f : {"server-0", "server-1", "worker-0", "worker-1"}) {
      INFO(f);
      CHECK(std::filesystem::exists(dir + "/trace/" + f + ".json"));
      CHECK_FALSE(std::filesystem::exists(dir + "/trace/" + f + ".json.tmp"));
      CHECK_FALSE(std::filesystem::exists(dir + "/trace/" + f + ".json.part"));
    }
    std::filesystem::remove_all(dir + "/trace");
  };
  for (int run = 0; run < 2; ++run) {
    test::Proc launch("launch", {test::bin("psrt-launch"), cfg});
    REQUIRE(launch.wait_line("iter 100/", 120));
    launch.kill(SIGINT);
    CHECK(launch.wait_exit(60) == 130);
    every_file(launch.output());
  }
  for (int run = 0; run < 3; ++run) {  // SIGTERM to each process at once, as a cluster's stop
    test::Daemons d = test::start_daemons(cfg, 2, 2);
    REQUIRE(d.procs.at(2)->wait_line("iter 100/", 120));
    for (auto& p : d.procs) p->kill(SIGTERM);
    for (auto& p : d.procs) CHECK(p->wait_exit(60) == 1);  // the job's failure, not the signal
    every_file(d.procs[0]->output());
  }
}

TEST_CASE("a killed process leaves its trace so far, and psrt-timeline merge reads it",
          "[integration]") {
  // The events were held in memory until the process ended: a kill lost all of them.
  const std::string dir = test::temp_dir("timeline");
  const std::string cfg = mlp_job(dir, "iterations: 1000000, log_every: 50");
  test::Daemons d = test::start_daemons(cfg, 2, 2);
  REQUIRE(d.procs.at(2)->wait_line("iter 100/", 120));  // worker 0's log; worker 1 is as far
  const std::string trace = dir + "/trace";
  const auto written = [&] {  // the part file holds a second's events at most a second late
    std::ifstream in(trace + "/worker-1.json.part");
    int forward = 0;
    for (std::string line; std::getline(in, line);)
      forward += line.find("\"cat\":\"forward\"") != line.npos;
    return forward >= 100;
  };
  for (int i = 0; i < 300 && !written(); ++i) std::this_thread::sleep_for(100ms);
  d.procs[3]->kill(SIGKILL);  // worker 1
  CHECK(d.procs[3]->wait_exit(30) == 128 + SIGKILL);
  for (int i = 0; i < 3; ++i) d.procs[i]->kill(SIGTERM);
  for (int i = 0; i < 3; ++i) CHECK(d.procs[i]->wait_exit(60).has_value());
  CHECK_FALSE(std::filesystem::exists(trace + "/worker-1.json"));
  REQUIRE(std::filesystem::exists(trace + "/worker-1.json.part"));
  test::Proc merge("merge", {test::bin("psrt-timeline"), "merge", trace, "-o", dir + "/all.json"});
  REQUIRE(merge.wait_exit(30) == 0);
  CHECK_THAT(merge.output(), Catch::Contains("worker-1.json.part: unfinished"));
  int lines = 0;
  auto n = count_events(dir + "/all.json", lines);
  CHECK(n["M"] == 4 * 6);           // all four processes, the killed one too
  CHECK(n["forward"] > 100 + 100);  // worker 0's first 100 iterations and worker 1's written
  CHECK(parses_as_json(dir + "/all.json"));
}

TEST_CASE("a file-size limit fails the timeline's writes, not the job", "[integration]") {
  // ulimit -f (inherited from a batch system): SIGXFSZ killed the daemon at its first write past
  // it (exit 153) and the job failed; a disk that fills is reported and the run carries on.
  const std::string dir = test::temp_dir("timeline");
  const std::string cfg = mlp_job(dir, "iterations: 300, log_every: 0");
  test::Proc launch("launch", {"/bin/bash", "-c",
                               "ulimit -f 64 && exec " + test::bin("psrt-launch") + " " + cfg});
  const auto rc = launch.wait_exit(120);
  INFO(launch.output());
  CHECK(rc == 0);
  CHECK_THAT(launch.output(),
             Catch::Contains("timeline not written: ") && Catch::Contains("File too large"));
  CHECK_THAT(launch.output(), Catch::Contains("every process finished"));
}
