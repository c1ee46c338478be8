"""psrt_fit_calibration.fit against a synthetic simulator whose iteration time is linear in the
calibration's per-message and per-byte costs: measurements made with known factors (3x per
message, 0.5x per byte) must give those factors back, and the file written must hold the scaled
costs. Then reading a base file as psrt-sim does (trailing comments and flow style were misread:
a ValueError after all the runs, or all-zero costs), with python3-yaml and without, and the checks
psrt-bench-priority makes before any run (a base with no costs, OUT in no folder: exit 2, one
line). Usage: fit_calibration_test.py DIR_WITH_psrt_fit_calibration.py"""

import os
import subprocess
import sys
import tempfile

sys.path.insert(0, sys.argv[1])
import psrt_fit_calibration as fc  # noqa: E402

BASE = {"worker_message_us": 10.0, "server_message_us": 10.0,
        "worker_byte_ns": 2.0, "server_byte_ns": 2.0}


def synthetic_ms(messages, megabytes, costs):
    """A run of `messages` messages and `megabytes` MB per iteration, both I/O threads busy."""
    us = messages * (costs["worker_message_us"] + costs["server_message_us"])
    ns = megabytes * 1e6 * (costs["worker_byte_ns"] + costs["server_byte_ns"])
    return 50.0 + us / 1e3 + ns / 1e6


COSTS = {"worker_message_us": 3.392, "server_message_us": 3.392, "worker_byte_ns": 0.79398,
         "server_byte_ns": 0.79398}
GOOD = [  # (what, file text): every one has COSTS
    ("trailing comments", "# header\nworker_message_us: 3.392   # per message\n"
     "server_message_us: 3.392 # same\nworker_byte_ns: 0.79398\nserver_byte_ns: 0.79398\n"),
    ("flow style", "{worker_message_us: 3.392, server_message_us: 3.392, worker_byte_ns: 0.79398,"
     " server_byte_ns: 0.79398}\n"),
    ("flow style on lines, commented", "# c\n{worker_message_us: 3.392,  # m\n"
     " server_message_us: 3.392, worker_byte_ns: 0.79398,\n server_byte_ns: 0.79398}\n"),
    ("quoted, with notes", "made_by: \"psrt-bench-transport --calibrate\"\nsizes: \"1024:7.3, "
     "4096:9.6\"\n'worker_message_us': 3.392\nserver_message_us: \"3.392\"\n"
     "worker_byte_ns: 0.79398\nserver_byte_ns: 0.79398\n"),
]


def reading(work):
    """GOOD files give COSTS, with python3-yaml and with the parser used without it."""
    for i, (what, text) in enumerate(GOOD):
        path = os.path.join(work, "good%d.yaml" % i)
        with open(path, "w") as f:
            f.write(text)
        for without_yaml in (False, True):
            saved = sys.modules.get("yaml")
            if without_yaml:
                sys.modules["yaml"] = None  # import yaml raises ImportError
            try:
                got = fc.read_costs(path)
            finally:
                if without_yaml:
                    sys.modules.pop("yaml")
                    if saved is not None:
                        sys.modules["yaml"] = saved
            assert got == COSTS, "%s%s: %s" % (what, " (no yaml)" if without_yaml else "", got)
    print("base files read as psrt-sim reads them: %d kinds, with and without python3-yaml" %
          len(GOOD))


def refused(work, driver):
    """Bases with nothing to scale and an OUT that cannot be written: CalibrationError, and the
    driver exits 2 with one line before it sets up anything."""
    zero, bad, good = (os.path.join(work, n) for n in ("zero.yaml", "bad.yaml", "good0.yaml"))
    with open(zero, "w") as f:
        f.write("{worker_message_us: 0, server_message_us: 0}\n")
    with open(bad, "w") as f:
        f.write("worker_message_us: fast\n")
    cases = [("", "f.yaml", "none has no costs"), (zero, "f.yaml", "all zero"),
             (bad, "f.yaml", "not a number"), (work + "/nope.yaml", "f.yaml", "cannot be read"),
             (good, work + "/no/f.yaml", "no folder"), (good, work, "is a folder")]
    for base, out, said in cases:
        try:
            fc.check(base, out)
            raise AssertionError("check(%r, %r) passed" % (base, out))
        except fc.CalibrationError as e:
            assert said in str(e), "check(%r, %r): %s" % (base, out, e)
        r = subprocess.run([sys.executable, driver, "--calibration", base or "none",
                            "--fit-calibration", out], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=30)
        err = r.stderr.strip().splitlines()
        assert r.returncode == 2 and len(err) == 1 and said in err[0] and not r.stdout, (
            base, out, r.returncode, r.stdout, r.stderr)
    assert fc.check(good, os.path.join(work, "f.yaml")) == COSTS
    print("%d bad bases or OUTs refused before any run, exit 2, one line" % len(cases))


def main():
    # Runs of many small messages and of few large ones, so that the two factors can be told apart.
    shapes = [(2000, 1.0), (200, 10.0), (600, 4.0), (50, 20.0), (1200, 2.0)]
    truth = fc.scaled(BASE, 3.0, 0.5)
    runs = [("run%d" % i, synthetic_ms(m, mb, truth), (m, mb)) for i, (m, mb) in enumerate(shapes)]
    with tempfile.TemporaryDirectory() as work:
        base_path = os.path.join(work, "base.yaml")
        fc.write_costs(base_path, BASE, ["test base"])

        def simulate(args, cal):
            return synthetic_ms(args[0], args[1], fc.read_costs(cal))

        out = os.path.join(work, "fitted.yaml")
        a, b = fc.fit(base_path, runs, simulate, out, work, lambda line: print(line))
        assert abs(a - 3.0) < 0.03, "per-message factor %.4f, want 3" % a
        assert abs(b - 0.5) < 0.01, "per-byte factor %.4f, want 0.5" % b
        written = fc.read_costs(out)
        assert abs(written["worker_message_us"] - 30.0) < 0.3, written
        assert abs(written["server_byte_ns"] - 1.0) < 0.02, written
        text = open(out).read()
        assert "per-message costs times" in text and "runs fitted (5)" in text, text
    print("fit recovers the factors: %.4f per message, %.4f per byte" % (a, b))
    with tempfile.TemporaryDirectory() as work:
        reading(work)
        refused(work, os.path.join(sys.argv[1], "psrt-bench-priority"))


if __name__ == "__main__":
    main()
