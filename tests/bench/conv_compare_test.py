"""psrt-bench-convergence's equal-bytes comparison (bench/convergence/psrt_conv_curves.py):
LACO against a baseline is MET only when it is at least as accurate (mean final accuracy over the
seeds) and its bytes after the hot start are at most 1% over the baseline's; the whole run's bytes
are printed beside them.
Usage: conv_compare_test.py BENCH_DIR (the source tree's bench/)"""

import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(sys.argv[1], "convergence"))
sys.path.insert(0, os.path.join(sys.argv[1], "common"))
import psrt_conv_curves as cc  # noqa: E402


def write_runs(workdir, name, variant, finals, steady, whole):
    for seed, acc in enumerate(finals, 1):
        d = os.path.join(workdir, "%s-%s-seed%d" % (name, variant, seed))
        os.makedirs(d)
        with open(os.path.join(d, "result.json"), "w") as f:
            json.dump({"accuracy": acc, "evals": [[10, acc]], "iterations": 10,
                       "steady": steady, "whole": whole}, f)


def line_for(lines, baseline):
    hits = [line for line in lines if baseline in line]
    assert len(hits) == 1, lines
    return hits[0]


def main():
    with tempfile.TemporaryDirectory() as tmp:
        # signSGD pair: LACO more accurate and within 1% of the bytes: MET
        write_runs(tmp, "ex", "signsgd", [0.90, 0.92], 1000.0, 1000.0)
        write_runs(tmp, "ex", "laco-at-signsgd-bytes", [0.91, 0.915], 1009.0, 1100.0)
        # Gradient Dropping pair: LACO more accurate but 5% more bytes: MISSED, and says so
        write_runs(tmp, "ex", "graddrop", [0.80, 0.80, 0.80], 2000.0, 2000.0)
        write_runs(tmp, "ex", "laco", [0.85, 0.85, 0.85], 2100.0, 2500.0)
        lines = cc.compare(tmp, "ex")
        sign = line_for(lines, "signSGD")
        assert sign.startswith("MET "), sign
        assert "+0.25 points" in sign and "(0.9125 vs 0.9100;" in sign, sign
        assert "1009 vs 1000 B per iteration per worker after the hot start, 1100 vs 1000 over " \
               "the whole run; seeds 2 vs 2" in sign, sign
        drop = line_for(lines, "Gradient Dropping")
        assert drop.startswith("MISSED "), drop
        assert "LACO sends 5.0% more" in drop and "seeds 3 vs 3" in drop, drop
    with tempfile.TemporaryDirectory() as tmp:
        # fewer bytes but less accurate: MISSED; a pair without its baseline's runs: no line
        write_runs(tmp, "ex", "signsgd", [0.92], 1000.0, 1000.0)
        write_runs(tmp, "ex", "laco-at-signsgd-bytes", [0.919], 900.0, 950.0)
        write_runs(tmp, "ex", "laco", [0.95], 10.0, 10.0)
        lines = cc.compare(tmp, "ex")
        assert len(lines) == 1 and lines[0].startswith("MISSED ") and "-0.10 points" in lines[0], \
            lines
    print("ok: conv_compare_test")


if __name__ == "__main__":
    main()
