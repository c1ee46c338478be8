#!/usr/bin/python3
"""Tests of psrt-bench-suite (CTest, label integration).

  suite_test.py DRIVER SUITE validation    bad suite files: exit 2, one line naming the key; a
      run whose timeline is missing (a full disk): the cell fails with one line naming it
  suite_test.py DRIVER SUITE resume        the smoke suite, interrupted by SIGINT after its
      second cell: exit 130, no daemon and no network namespace left, the finished cells in
      results.csv; run again: those cells are kept (not redone) and the rest run; a third run
      redoes nothing; a changed suite is refused (exit 2) unless --fresh. A results.csv cut
      mid-row or inside its settings hash (no line end): the cut row's cell is said once and
      redone, its row on a line of its own; a line of non-UTF-8 bytes is ignored; a header that
      is not one: exit 2, one line.
"""

import csv
import os
import signal
import subprocess
import sys
import tempfile

FAILS = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        FAILS.append(what)


def run(argv, **kw):
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


BAD = [  # (what is changed in the smoke suite, the key the error must name)
    ("iteratoins: 5\n", "iteratoins"),
    ("modes: [bigdl, lifo]\n", "modes[1]"),
    ("workers: [0, 2]\n", "workers[0]"),
    ("servers: {per: 2}\n", "servers.per"),
    ("link_rate: fast\n", "link_rate"),
    ("link_rate: 0mbit\n", "link_rate"),  # was accepted: the cells ran unshaped
    ("repeats: two\n", "repeats"),
    ("laco: {density: 2}\n", "laco.density"),
    ("models:\n  - {name: vgg16, backend: gpu}\n", "backend"),
    ("models:\n  - {name: vgg16, eval_every: 10}\n", "eval_every"),
    ("models:\n  - {name: nosuchmodel}\n", "profile"),
    ("models:\n  - {name: resnet50, workers: [1, 1]}\n", "workers"),
]


def validation(driver, suite, tmp):
    base = open(suite).read()
    r = run([driver, suite, "--check"])
    check(r.returncode == 0 and "is valid" in r.stdout, "the smoke suite itself is valid")
    for i, (change, key) in enumerate(BAD):
        top = change.split(":")[0]
        # replace the top-level key's block where the smoke suite has it, else append
        lines, out, skip = base.splitlines(True), [], False
        for line in lines:
            if line.startswith(top + ":"):
                skip = True
                continue
            if skip and (line.startswith(" ") or line.startswith("-")):
                continue
            skip = False
            out.append(line)
        path = os.path.join(tmp, "bad%d.yaml" % i)
        with open(path, "w") as f:
            f.write("".join(out) + change)
        r = run([driver, path, "--check"])
        err = r.stderr.strip().splitlines()
        check(r.returncode == 2 and len(err) == 1 and key in err[0],
              "%r -> exit 2, one line naming %s (got %d: %s)" % (change.strip(), key,
                                                                  r.returncode, r.stderr.strip()))
    missing_timeline(suite, tmp)
    os_errors(driver)


def os_errors(driver):
    """Any OSError of a suite (a fork refused, a missing tool) was blamed on a full disk."""
    import errno
    import importlib.machinery
    import importlib.util
    sys.dont_write_bytecode = True  # no __pycache__ beside the driver
    loader = importlib.machinery.SourceFileLoader("psrt_bench_suite", driver)
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(module)
    full = module.os_failure(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "r.csv"), "out")
    fork = module.os_failure(OSError(errno.EAGAIN, os.strerror(errno.EAGAIN)), "out")
    check(full.startswith("r.csv: ") and "disk is full" in full and "disk" not in fork and
          fork.startswith("out: "), "OSError lines: full %r, fork %r" % (full, fork))


def missing_timeline(suite, tmp):
    """A run whose worker left no timeline (it removes the file when a full disk fails its
    write; its .err is empty for the same reason): the cell fails with one line naming the file
    and the likely cause (a RuntimeError, which the driver prints as the cell's FAILED line). It
    was a FileNotFoundError traceback that ended the whole suite."""
    import argparse
    import re
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    sys.path[1:1] = [os.path.join(src, "bench", "common"), os.path.join(src, "bench", "suite")]
    import psrt_bench as pb
    import psrt_suite_cells as cells
    import psrt_suite_config as sc

    class Done:  # worker 0's reader: the run itself went well
        lines, stamps = ["PSRT_RESULT ms_per_iteration=2.0 received_bytes=64"], [0.0]

        def find(self, pattern):
            return next((m for m in map(lambda x: re.search(pattern, x), self.lines) if m), None)

    class Cleanup:
        def kill_children(self):
            pass

    loaded = sc.load(suite, os.path.join(src, "bench", "profiles"))
    cell = cells.plan(loaded)[0]
    pb.run_daemons = lambda *a, **kw: [Done() for _ in range(cell.workers)]
    rundir = os.path.join(tmp, "run-0")
    net = pb.Net(None, 1, "1gbit", "x", None)
    args = argparse.Namespace(data=tmp, bin_dir=tmp)
    try:
        cells.run_once(args, loaded, cell, net, rundir, Cleanup())
        got = "no error"
    except RuntimeError as e:
        got = str(e)
    except Exception as e:  # noqa: BLE001 (what the test is about)
        got = "%s: %s" % (type(e).__name__, e)
    want = os.path.join(rundir, "timeline", "worker-0.json")
    check(got.startswith(want + ": ") and "disk full?" in got and "\n" not in got,
          "a run without its timeline: one line naming it and the likely cause (%s)" % got)


def leftovers(out, prefix):
    procs = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                cmd = open("/proc/%s/cmdline" % pid, "rb").read().decode(errors="replace")
            except OSError:
                continue
            if out in cmd and "suite_test" not in cmd:
                procs.append("%s %s" % (pid, cmd.replace("\0", " ")[:160]))
    ns = run(["ip", "netns", "list"]).stdout if os.geteuid() == 0 else ""
    return procs, [line for line in ns.splitlines() if line.startswith(prefix + "-")]


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def resume(driver, suite, tmp):
    out = os.path.join(tmp, "out")
    prefix = "pst%d" % (os.getpid() % 100000)
    cmd = [driver, suite, "--out", out, "--prefix", prefix]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen = []
    for line in p.stdout:
        seen.append(line)
        if line.startswith("[3/"):  # cell 3 started: cells 1 and 2 are in results.csv
            p.send_signal(signal.SIGINT)
            break
    rest = p.communicate(timeout=60)[0]
    check(p.returncode == 130, "SIGINT during cell 3: exit 130 (got %s)" % p.returncode)
    if p.returncode != 130:
        print("the interrupted run's output, from cell 3 on:\n" + seen[-1] + rest[-3000:])
    check("the same command resumes" in rest, "the interrupted run says how to resume")
    procs, nss = leftovers(out, prefix)
    check(not procs, "no daemon left after SIGINT (%s)" % procs)
    check(not nss, "no network namespace left after SIGINT (%s)" % nss)
    first = rows(os.path.join(out, "results.csv"))
    check(len(first) == 2, "results.csv holds the 2 finished cells (%d)" % len(first))

    r = run(cmd, timeout=120)
    check(r.returncode == 0, "second run finishes (exit %d: %s)" % (r.returncode, r.stderr[-500:]))
    check("2 done earlier" in r.stdout and "[1/12]" in r.stdout and
          "done earlier, kept" in r.stdout, "second run keeps the 2 finished cells")
    kept = [line for line in r.stdout.splitlines() if "done earlier, kept" in line]
    ran = [line for line in r.stdout.splitlines() if ": running" in line]
    check(len(kept) == 2 and len(ran) == 10 and not any(x.startswith(("[1/", "[2/"))
                                                      for x in ran),
          "cells 1-2 not redone, the other 10 run (%d kept, %d run)" % (len(kept), len(ran)))
    second = rows(os.path.join(out, "results.csv"))
    check(len(second) == 12 and second[:2] == first, "results.csv: 12 rows, the first 2 unchanged")
    check(os.path.exists(os.path.join(out, "summary.md")), "summary.md written")
    for png in ("scalability", "iteration_time", "speedup"):
        path = os.path.join(out, png + ".png")
        check(os.path.exists(path) and open(path, "rb").read(4) == b"\x89PNG", png + ".png written")
    check(all(r_["ms_per_iter"] and float(r_["ms_per_iter"]) > 0 for r_ in second),
          "every row has a time per iteration")
    native = [x for x in second if x["backend"] == "native"]
    check(native and all(x["final_accuracy"] for x in native), "native cells report accuracy")

    r = run(cmd, timeout=60)
    check(r.returncode == 0 and "12 done earlier, 0 to run" in r.stdout and
          ": running" not in r.stdout, "third run redoes nothing")
    check(rows(os.path.join(out, "results.csv")) == second, "third run leaves results.csv as is")

    damaged(cmd, os.path.join(out, "results.csv"), second)

    changed = os.path.join(tmp, "changed.yaml")
    with open(changed, "w") as f:
        f.write(open(suite).read().replace("\niterations: 6", "\niterations: 7"))
    r = run([driver, changed, "--out", out, "--prefix", prefix], timeout=60)
    check(r.returncode == 2 and "other settings" in r.stderr,
          "a changed suite on old results: exit 2 (%d: %s)" % (r.returncode, r.stderr.strip()))
    procs, nss = leftovers(out, prefix)
    check(not procs and not nss, "nothing left behind at the end")


def damaged(cmd, path, whole):
    """results.csv as an interrupted write leaves it: the last row's cell is redone (its figures
    may differ, its key and settings not), every row whole, nothing glued to the cut line."""
    data = open(path, "rb").read()
    last = data.rstrip(b"\r\n").rfind(b"\n") + 1  # where the last row starts
    for cut, where in ((last + 30, "mid-row"), (len(data) - 7, "inside the settings hash")):
        with open(path, "wb") as f:
            f.write(data[:cut])
        r = run(cmd, timeout=60)
        said = [x for x in r.stderr.splitlines() if "line 13 is incomplete" in x]
        check(r.returncode == 0 and len(said) == 1 and "11 done earlier, 1 to run" in r.stdout,
              "results.csv cut %s: said once, that cell rerun (exit %d: %s)" % (
                  where, r.returncode, r.stderr.strip()[-300:]))
        now = rows(path)
        check(len(now) == 12 and now[:11] == whole[:11] and
              all(len(x) == 24 and None not in x for x in now) and
              [now[11][k] for k in ("model", "mode", "settings")] ==
              [whole[11][k] for k in ("model", "mode", "settings")],
              "cut %s: 12 whole rows, the redone one on its own line" % where)
        r = run(cmd, timeout=60)
        check(r.returncode == 0 and "12 done earlier, 0 to run" in r.stdout and
              "incomplete" not in r.stderr, "cut %s: the next run redoes nothing" % where)
    data = open(path, "rb").read()
    with open(path, "wb") as f:
        f.write(data + b"vgg16,\xff\xfe,1\r\n")
    r = run(cmd, timeout=60)
    check(r.returncode == 0 and "12 done earlier, 0 to run" in r.stdout and
          "line 14 is incomplete" in r.stderr and "Traceback" not in r.stderr,
          "a line of non-UTF-8 bytes: ignored (exit %d: %s)" % (r.returncode, r.stderr[-300:]))
    with open(path, "wb") as f:
        f.write(b"\xffmodel,backend\r\n" + data[data.index(b"\n") + 1:])
    r = run(cmd, timeout=60)
    err = r.stderr.strip().splitlines()
    check(r.returncode == 2 and len(err) == 1 and "not the header" in err[0],
          "a damaged header: exit 2, one line (%d: %s)" % (r.returncode, r.stderr.strip()))
    with open(path, "wb") as f:
        f.write(data)


def main():
    driver, suite, what = sys.argv[1:4]
    with tempfile.TemporaryDirectory(prefix="psrt-suite-test.") as tmp:
        {"validation": validation, "resume": resume}[what](driver, suite, tmp)
    print("%d failure(s)" % len(FAILS))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
