"""psrt-bench-convergence's report: the codecs' table, the target lines and the gnuplot plots
(accuracy against iterations and against bytes pushed). Standard library only."""

import math
import os
import shutil
import subprocess

import psrt_bench as pb
from psrt_conv_runs import CODECS, label, last_mean, log, model_text, opt_text, steady_from

def print_convergence(args, runs):
    none = runs.get("none")
    n = args.smooth
    print("\n%-22s | %8s | %13s | %13s | %9s | %8s | %9s | %8s | %9s" % (
        "codec", "density", "B/iter/worker", "B/iter/worker", "ratio", "final", "acc-none",
        "last-%d" % n, "acc-none"))
    print("%-22s | %8s | %13s | %13s | %9s | %8s | %9s | %8s | %9s" % (
        "", "", "steady", "whole run", "vs none", "accuracy", "points", "mean", "points"))
    for codec in CODECS:
        r = runs.get(codec)
        if not r:
            continue
        dens = "%.4g" % r["density"] if r["density"] is not None else (
            "1 bit" if codec == "signsgd" else "1")
        ratio = "%8.1fx" % (none["steady_bytes"] / r["steady_bytes"]) if none else "%9s" % "-"
        acc = r["accuracy"]
        diff = "%+9.2f" % (100 * (acc - none["accuracy"])) if none else "%9s" % "-"
        sm = last_mean(r, n)
        sdiff = "%+9.2f" % (100 * (sm - last_mean(none, n))) if none else "%9s" % "-"
        print("%-22s | %8s | %13.0f | %13.0f | %s | %8.4f | %s | %8.4f | %s" % (
            label(args, codec), dens, r["steady_bytes"], r["all_bytes"], ratio, acc, diff, sm, sdiff))
    print("steady: iterations >= %d (after LACO's %d dense calibration and %d warm-up "
          "iterations); bytes are the payloads pushed (codec headers included, protobuf message "
          "headers not), mean over the workers and iterations; ratio = none's steady bytes / the "
          "codec's; final = worker 0's test accuracy after the last iteration; last-%d mean = "
          "mean of the last %d evaluations (every %d iterations, the final one included), less "
          "sensitive to the step-to-step noise of the test accuracy" % (
              steady_from(args), args.calibration_iters, args.warmup_iters, n, n,
              args.eval_every))
    if args.seeds > 1:
        print("accuracies are means over seeds %d..%d (job.seed: initial values and data order); "
              "per seed, final:" % (args.seed, args.seed + args.seeds - 1))
        for codec in CODECS:
            if codec in runs and "finals" in runs[codec]:
                print("  %-22s %s" % (label(args, codec),
                                      "  ".join("%.4f" % a for a in runs[codec]["finals"])))
    if not none or args.smoke:
        return
    print("\n== targets (issue 4 item 7)")
    laco = runs.get("laco")
    if laco:
        d = 100 * (none["accuracy"] - laco["accuracy"])
        ds = 100 * (last_mean(none, n) - last_mean(laco, n))
        print("%-6s LACO within 0.5 points of none: %+.2f points vs none (%.4f vs %.4f); "
              "last-%d mean: %+.2f points" % ("MET" if d <= 0.5 else "MISSED", -d,
                                              laco["accuracy"], none["accuracy"], n, -ds))
        for other in ("signsgd", "graddrop"):
            o = runs.get(other)
            if not o:
                continue
            # signSGD's bytes are fixed (1 bit per element): the like-for-like LACO is the one
            # matched to them, where that run exists; LACO at its own density is shown too.
            mine = runs.get("laco@signsgd") if other == "signsgd" else None
            pairs = [("LACO @ signSGD's bytes", mine, True)] if mine else []
            pairs.append(("LACO", laco, not mine))
            for name, l, is_target in pairs:
                diff = 100 * (l["accuracy"] - o["accuracy"])
                verdict = ("MET" if diff >= 0 else "MISSED") if is_target else "(info)"
                print("%-6s %s at least as accurate as %s: %+.2f points (%.4f vs %.4f, %.0f vs "
                      "%.0f B per iteration); last-%d mean: %+.2f points" % (
                          verdict, name, label(args, other), diff, l["accuracy"], o["accuracy"],
                          l["steady_bytes"], o["steady_bytes"], n,
                          100 * (last_mean(l, n) - last_mean(o, n))))
        ratio = none["steady_bytes"] / laco["steady_bytes"]
        whole = none["all_bytes"] / laco["all_bytes"]
        print("%-6s LACO ratio at least 50x: %.1fx steady (%.0f / %.0f B per iteration); %.1fx "
              "over the whole run, dense calibration and warm-up included" % (
                  "MET" if ratio >= 50 else "MISSED", ratio, none["steady_bytes"],
                  laco["steady_bytes"], whole))


def plot(args, runs, workdir):
    gnuplot = shutil.which("gnuplot")
    if not gnuplot:
        log("gnuplot not found: no plot (apt-get install gnuplot-nox)")
        return None
    datafile = os.path.join(workdir, "accuracy.dat")
    with open(datafile, "w") as f:
        for codec in CODECS:
            r = runs.get(codec)
            if not r:
                continue
            f.write("# %s\n" % codec)
            pts = list(r["evals"])
            if r["accuracy"] is not None:
                pts.append((r["iterations"], r["accuracy"]))
            for it, a in pts:
                f.write("%d %.4f\n" % (it, 100 * a))
            f.write("\n\n")
    out = os.path.abspath(args.plot)
    term = pb.gnuplot_terminal(gnuplot, out)
    names = [c for c in CODECS if c in runs]
    none = runs.get("none")
    lo = min(a for c in names for _, a in runs[c]["evals"][len(runs[c]["evals"]) // 4:]) \
        if all(runs[c]["evals"] for c in names) else None
    title = "Fashion-MNIST, %s, %d workers, %s%s" % (
        model_text(args), args.workers, opt_text(args, short=True),
        (", curves: seed %d" % args.seed) if args.seeds > 1 else "")
    final = "final" if args.seeds == 1 else "mean final"
    lines = []
    for i, c in enumerate(names):
        r = runs[c]
        ratio = (" %.0fx" % (none["steady_bytes"] / r["steady_bytes"])) if none else ""
        dens = (" d=%.3g" % r["density"]) if r["density"] is not None else ""
        lines.append("'%s' index %d with linespoints lw 2 pt 7 ps 0.6 title '%s%s,%s %s %.2f%%' "
                     "noenhanced" % (datafile, i, label(args, c), dens, ratio, final,
                                     100 * r["accuracy"]))
    script = """set terminal %s
set output '%s'
set title "%s"
set xlabel 'iteration'
set ylabel 'test accuracy (%%)'
set key outside below maxrows 3
set grid
%s
plot %s
""" % (term, out, title, ("set yrange [%.1f:*]" % math.floor(100 * lo - 1)) if lo else "",
       ", \\\n     ".join(lines))
    gp = os.path.join(workdir, "accuracy.gp")
    with open(gp, "w") as f:
        f.write(script)
    r = subprocess.run([gnuplot, gp], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        log("gnuplot failed: " + r.stdout.strip())
        return None
    print("plot: %s (gnuplot script %s, data %s)" % (out, gp, datafile))
    return out


