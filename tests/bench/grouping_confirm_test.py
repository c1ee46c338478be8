"""psrt-bench-priority's confirmation round (bench/priority/psrt_grouping_bench.py): auto and the
sweep's fastest baseline run again, interleaved, and the measured "no slower" line compares those
fresh runs; worker 0's logged groups tell when auto ran a baseline's own groups.
Usage: grouping_confirm_test.py DIR_WITH_psrt_grouping_bench.py"""

import contextlib
import io
import os
import sys
import tempfile

sys.path.insert(0, sys.argv[1])
import psrt_grouping_bench as gb  # noqa: E402

SIM = {"iter_ms": 100.0, "jittered_ms": 100.0, "bound_ms": 80.0}


def rows(measured):
    return [(label, label, ms, dict(SIM, jittered_ms=ms)) for label, ms in measured]


def check_confirm_runs_best_baseline_interleaved():
    calls = []
    fresh = {"auto": iter([101.0, 99.0, 100.0]), "mgwfbp": iter([100.5, 102.0, 103.0])}

    def run(g, tag):
        calls.append(tag)
        return next(fresh[g])
    # mgwfbp is the sweep's fastest baseline: the one confirmed
    sweep = rows([("none", 120.0), ("mgwfbp", 95.0), ("ddp", 97.0), ("auto", 98.0)])
    got = gb.confirm("m", sweep, 3, run, lambda _: None)
    assert got is not None and got[0] == "mgwfbp", got
    assert calls == ["m-confirm-auto-0", "m-confirm-mgwfbp-0", "m-confirm-mgwfbp-1",
                     "m-confirm-auto-1", "m-confirm-auto-2", "m-confirm-mgwfbp-2"], calls
    assert got[1] == [101.0, 99.0, 100.0] and got[2] == [100.5, 102.0, 103.0], got
    assert gb.confirm("m", sweep, 0, run, lambda _: None) is None
    assert gb.confirm("m", rows([("auto", 1.0)]), 3, run, lambda _: None) is None
    return sweep, got


def printed(fn, *args):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        fn(*args)
    return out.getvalue().splitlines()


def check_lines(sweep, confirmed):
    # the sweep alone: auto 98 against mgwfbp's 95 is missed
    lines = printed(gb.print_no_slower, "m", sweep, None, {})
    measured = [x for x in lines if ", measured:" in x]
    assert len(measured) == 1 and measured[0].startswith("MISSED"), lines
    # the fresh runs: auto's best 99 against mgwfbp's 100.5 is met, the sweep's figures beside it
    lines = printed(gb.print_no_slower, "m", sweep, confirmed, {})
    measured = [x for x in lines if ", measured:" in x]
    assert len(measured) == 1 and measured[0].startswith("MET"), lines
    assert "best of 3 fresh interleaved runs" in measured[0], measured
    assert "in the sweep auto 98.0 ms, best baseline mgwfbp 95.0 ms" in measured[0], measured
    simulated = [x for x in lines if "simulated (jittered)" in x]
    assert len(simulated) == 1 and simulated[0].startswith("MISSED"), lines
    worse = ("mgwfbp", [101.0, 102.0, 103.0], [100.0, 104.0, 100.5])
    lines = printed(gb.print_no_slower, "m", sweep, worse, {"auto": "g", "mgwfbp": "g"})
    measured = [x for x in lines if ", measured:" in x]
    assert measured[0].startswith("MISSED") and "auto ran mgwfbp's own groups" in measured[0], \
        measured


def check_logged_groups():
    with tempfile.TemporaryDirectory() as d:
        assert gb.logged_groups(d) is None
        line = ("15:23:46.950 I [worker 0] grouping auto (93 simulations in 574 ms, from mgwfbp): "
                "61 messages per iteration; 3 groups of 284 tensors: 0-203 (1.31e+03 KB) "
                "204-280 (2.02e+03 KB) 281-283 (313 KB)\n")
        with open(os.path.join(d, "worker0.out"), "w") as f:
            f.write("other line\n" + line)
        got = gb.logged_groups(d)
        assert got == ("3 groups of 284 tensors: 0-203 (1.31e+03 KB) 204-280 (2.02e+03 KB) "
                       "281-283 (313 KB)"), got
        # after online trials, the grouping kept is the one that ran
        kept = ("15:24:01.000 I [worker 0] grouping kept: ddp:9:1 from iteration 13: 60 messages "
                "per iteration; 2 groups of 284 tensors: 0-99 (1 KB) 100-283 (2 KB)\n")
        with open(os.path.join(d, "worker0.out"), "a") as f:
            f.write(kept)
        assert gb.logged_groups(d) == "2 groups of 284 tensors: 0-99 (1 KB) 100-283 (2 KB)"
        # 26 iterations leave 24 steady ones; auto's 48 too, after 24 of trials and choice
        assert gb.job_iterations("auto", 4, 26) == 48 and gb.job_iterations("auto", 1, 26) == 26
        assert gb.job_iterations("mgwfbp", 4, 26) == 26
        assert gb.job_iterations("auto", 4, 20) == 48  # at least twice the trials
        # every tensor alone is what `none` runs, which logs nothing
        with open(os.path.join(d, "worker0.out"), "w") as f:
            f.write("x grouping auto (1 simulations): 3 messages per iteration; 3 groups of 3 "
                    "tensors: 0 (1 KB) 1 (1 KB) 2 (1 KB)\n")
        assert gb.logged_groups(d) is None
    assert gb.same_groups({"a": None, "b": None}, "a", "b")
    assert not gb.same_groups({"a": "x", "b": None}, "a", "b")
    assert not gb.same_groups({"a": "x"}, "a", "b")


def main():
    sweep, confirmed = check_confirm_runs_best_baseline_interleaved()
    check_lines(sweep, confirmed)
    check_logged_groups()
    print("grouping confirmation: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
