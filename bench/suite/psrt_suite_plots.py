"""psrt_suite_plots: the suite's gnuplot charts, one panel per model, one line or bar per mode:
scalability.png (samples/s against workers), iteration_time.png (ms per iteration),
speedup.png (over bigdl at the same cluster)."""

import os
import shutil
import subprocess

import psrt_bench as pb

PROG = "psrt-bench-suite"
COLORS = {"bigdl": "#000000", "fifo": "#999999", "nonpreemptive": "#1f77b4",
          "preemptive": "#d62728", "preemptive+laco": "#2ca02c",
          "preemptive+grouping": "#9467bd"}


def tables(rows):
    """{model: (workers list, modes list, {(mode, workers): row})}, in the rows' order."""
    out = {}
    for r in rows:
        ws, modes, cells = out.setdefault(r["model"], ([], [], {}))
        w = int(r["workers"])
        if w not in ws:
            ws.append(w)
            cells[w] = int(r["servers"])
        if r["mode"] not in modes:
            modes.append(r["mode"])
        cells[(r["mode"], w)] = r
    return out


def write_data(path, ws, modes, cells, field):
    with open(path, "w") as f:
        f.write("# workers %s (%s)\n" % (" ".join(modes), field))
        for w in sorted(ws):
            tic = "%d" % w if len(set(cells[x] for x in ws)) == 1 else "%d (%d srv)" % (
                w, cells[w])
            vals = []
            for m in modes:
                r = cells.get((m, w))
                vals.append(r[field] if r and r[field] not in ("", None) else "NaN")
            f.write("%d \"%s\" %s\n" % (w, tic, " ".join(vals)))


def panels(models):
    n = len(models)
    cols = 1 if n == 1 else 2
    rows = (n + cols - 1) // cols
    return rows, cols


def chart(gnuplot, out, name, title, ylabel, field, data, kind, extra=""):
    models = list(data)
    nrows, ncols = panels(models)
    png = os.path.join(out, name + ".png")
    term = pb.gnuplot_terminal(gnuplot, png, "%d,%d" % (620 * ncols, 430 * nrows + 40))
    gp = ["set terminal " + term, "set output '%s'" % png,
          "set multiplot layout %d,%d title \"%s\" font ',13'" % (nrows, ncols, title),
          "set grid ytics", "set key top left font ',9' opaque", "set ylabel '%s'" % ylabel,
          "set xlabel 'workers'", "set offsets 0, 0, graph 0.3, 0",
          extra]
    for model in models:
        ws, modes, cells = data[model]
        dat = os.path.join(out, "plots", "%s-%s.dat" % (name, model))
        write_data(dat, ws, modes, cells, field)
        gp.append("set title '%s' noenhanced" % model)
        if kind == "lines":
            gp += ["set logscale x 2", "set xrange [%g:%g]" % (min(ws) / 1.3, max(ws) * 1.3),
                   "set yrange [0:*]"]
            plots = ["'%s' using 1:%d:xtic(2) with linespoints lw 2 pt 7 lc rgb '%s' title '%s'"
                     % (dat, i + 3, COLORS.get(m, "#ff7f0e"), m) for i, m in enumerate(modes)]
        else:
            gp += ["unset logscale x", "set style data histograms",
                   "set style histogram clustered gap 1", "set style fill solid 0.85 border -1",
                   "set boxwidth 0.9", "set xtics auto", "set xrange [*:*]", "set yrange [0:*]"]
            plots = ["'%s' using %d:xtic(2) lc rgb '%s' title '%s'" % (
                dat, i + 3, COLORS.get(m, "#ff7f0e"), m) for i, m in enumerate(modes)]
        gp.append("plot " + ", \\\n     ".join(plots))
    gp.append("unset multiplot")
    script = os.path.join(out, "plots", name + ".gp")
    with open(script, "w") as f:
        f.write("\n".join(gp) + "\n")
    r = subprocess.run([gnuplot, script], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    if r.returncode != 0:
        pb.log(PROG, "gnuplot failed on %s: %s" % (script, r.stdout.strip()))
        return None
    return png


def plot(suite, rows, out):
    gnuplot = shutil.which("gnuplot")
    if not gnuplot:
        pb.log(PROG, "gnuplot not found: no charts (apt-get install gnuplot-nox)")
        return []
    os.makedirs(os.path.join(out, "plots"), exist_ok=True)
    data = tables(rows)
    if not data:
        return []
    net = "emulated %s links" % suite["link_rate"] if all(
        r["network"] == "netns" for r in rows) else "LOOPBACK: functional only"
    pngs = [
        chart(gnuplot, out, "scalability", "Throughput against workers (%s)" % net,
              "samples/s", "samples_per_s", data, "lines"),
        chart(gnuplot, out, "iteration_time", "Time per iteration (%s)" % net,
              "ms per iteration", "ms_per_iter", data, "bars"),
        chart(gnuplot, out, "speedup", "Speedup over bigdl at the same cluster (%s)" % net,
              "x bigdl", "speedup_vs_bigdl", data, "lines"),
    ]
    return [p for p in pngs if p]
