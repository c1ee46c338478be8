"""psrt-bench-convergence --examples: learning curves of every run found in the work folder for an
example (dense and each compressed variant, e.g. laco, signsgd, graddrop), from their saved
result.json: test accuracy against iterations and against the bytes one worker pushed, one gnuplot
PNG (or SVG) each. Curves are the first seed's; the key gives each variant's mean final accuracy
over the seeds found. Standard library only."""

import json
import os
import re
import shutil
import subprocess

import psrt_bench as pb
from psrt_conv_runs import log


def collect(workdir, name):
    """{variant: {seed: result}} of the runs <name>-<variant>-seed<N> in workdir."""
    out = {}
    pat = re.compile(r"^%s-(.+)-seed(\d+)$" % re.escape(name))
    for d in sorted(os.listdir(workdir)):
        m = pat.match(d)
        path = os.path.join(workdir, d, "result.json")
        if m and os.path.exists(path):
            with open(path) as f:
                out.setdefault(m.group(1), {})[int(m.group(2))] = json.load(f)
    return out


def curve(r, by_bytes):
    """[(x, accuracy %)]: x is the iteration, or the MB one worker pushed before it."""
    pts = []
    for k, (it, acc) in enumerate(r["evals"]):
        if by_bytes:
            sent = r["sent_before"][k] if "sent_before" in r else r["whole"] * it
            pts.append((sent / 1e6, 100 * acc))
        else:
            pts.append((it, 100 * acc))
    return pts


def plot_example(workdir, name, out_prefix):
    """Writes <out_prefix>-iterations.png and <out_prefix>-bytes.png; returns their paths."""
    gnuplot = shutil.which("gnuplot")
    runs = collect(workdir, name)
    if not gnuplot or not runs:
        log("no curves for %s (%s)" % (name, "gnuplot not found" if runs else "no runs"))
        return []
    order = ["dense"] + sorted(v for v in runs if v != "dense")
    order = [v for v in order if v in runs]
    os.makedirs(os.path.dirname(out_prefix) or ".", exist_ok=True)  # e.g. a new --plot-dir
    made = []
    for by_bytes in (False, True):
        kind = "bytes" if by_bytes else "iterations"
        dat = "%s-%s.dat" % (out_prefix, kind)
        lines = []
        with open(dat, "w") as f:
            for i, v in enumerate(order):
                first = runs[v][min(runs[v])]
                f.write("# %s\n" % v)
                for x, a in curve(first, by_bytes):
                    f.write("%.6g %.4f\n" % (x, a))
                f.write("\n\n")
                finals = [r["accuracy"] for r in runs[v].values()]
                ratio = runs["dense"][min(runs["dense"])]["steady"] / first["steady"] \
                    if "dense" in runs else float("nan")
                lines.append("'%s' index %d with linespoints lw 2 pt 7 ps 0.5 title '%s: %.0fx, "
                             "mean final %.2f%% (%d seeds)' noenhanced" % (
                                 dat, i, v, ratio, 100 * sum(finals) / len(finals), len(finals)))
        png = "%s-%s%s" % (out_prefix, kind, ".svg" if out_prefix.endswith(".svg") else ".png")
        script = """set terminal %s
set output '%s'
set title "examples/%s.yaml: test accuracy against %s (first seed's curves)" noenhanced
set xlabel '%s'
set ylabel 'test accuracy (%%)'
set key bottom right
set grid
%s
plot %s
""" % (pb.gnuplot_terminal(gnuplot, png), png, name,
            "MB pushed per worker" if by_bytes else "iterations",
            "MB pushed per worker (log scale)" if by_bytes else "iteration",
            "set logscale x" if by_bytes else "", ", \\\n     ".join(lines))
        gp = "%s-%s.gp" % (out_prefix, kind)
        with open(gp, "w") as f:
            f.write(script)
        r = subprocess.run([gnuplot, gp], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
        if r.returncode != 0:
            log("gnuplot failed: " + r.stdout.strip())
            continue
        made.append(png)
    return made


def mean_final(runs):
    finals = [r["accuracy"] for r in runs.values()]
    return sum(finals) / len(finals)


# (LACO's variant, the baseline's variant, what the pair measures): issue 18 item 3, at equal
# bytes. signSGD is fixed at 1 bit per element, so LACO runs at the density matching its bytes.
PAIRS = [("laco-at-signsgd-bytes", "signsgd", "signSGD (EF)"),
         ("laco", "graddrop", "Gradient Dropping")]


BYTES_TOLERANCE = 1.01  # "equal bytes": LACO's steady bytes at most 1% over the baseline's


def mean_of(runs, key):
    return sum(r[key] for r in runs.values()) / len(runs)


def compare(workdir, name):
    """MET / MISSED lines of LACO against the baselines' runs found for the example: MET when
    LACO's mean final accuracy is at least the baseline's and its steady bytes (iterations past
    the hot start) are at most BYTES_TOLERANCE times the baseline's. The whole run's bytes, hot
    start included, are printed beside them."""
    runs = collect(workdir, name)
    lines = []
    for mine, other, label in PAIRS:
        if mine not in runs or other not in runs:
            continue
        a, b = mean_final(runs[mine]), mean_final(runs[other])
        ba, bb = mean_of(runs[mine], "steady"), mean_of(runs[other], "steady")
        wa, wb = mean_of(runs[mine], "whole"), mean_of(runs[other], "whole")
        equal_bytes = ba <= BYTES_TOLERANCE * bb
        verdict = "MET" if a >= b and equal_bytes else "MISSED"
        over = "" if equal_bytes else "; LACO sends %.1f%% more" % (100 * (ba / bb - 1))
        lines.append("%-6s %s: LACO (%s) at least as accurate as %s at equal bytes: %+.2f points "
                     "(%.4f vs %.4f; %.0f vs %.0f B per iteration per worker after the hot start"
                     "%s, %.0f vs %.0f over the whole run; seeds %d vs %d)" % (
                         verdict, name, mine, label, 100 * (a - b), a, b, ba, bb, over, wa, wb,
                         len(runs[mine]), len(runs[other])))
    return lines
