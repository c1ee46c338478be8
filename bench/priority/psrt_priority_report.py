"""psrt-bench-priority's tables and target lines for the push modes (the driver runs, this
prints)."""

import os

from psrt_bench import fmt_size


def print_table(model, rows):
    fifo = next((r[1] for r in rows if r[0] == "fifo"), None)
    print("%-14s | %9s | %9s | %9s | %8s | %8s | %8s | %-8s | %s" % (
        "mode", "measured", "simulated", "bound", "meas/sim", "meas/bnd", "vs fifo",
        "binding", "cores: cluster/machine/sim"))
    print("%-14s | %9s | %9s | %9s | %8s | %8s | %8s | %-8s |" % (
        "", "ms/iter", "ms", "ms", "", "", "speedup", "(sim)"))
    for mode, meas, sim, own, machine in rows:
        speed = "%7.2fx" % (fifo / meas) if fifo else "%8s" % "-"
        print("%-14s | %9.1f | %9.1f | %9.1f | %8.3f | %8.3f | %s | %-8s | %.2f / %.2f / %.2f" % (
            mode, meas, sim["iter_ms"], sim["bound_ms"], meas / sim["iter_ms"],
            meas / sim["bound_ms"], speed, sim["binding"], own, machine, sim.get("io_cores", 0)))
    s = rows[0][2]
    print("bounds: compute %.1f ms, link %.1f ms, critical %.1f ms; link/compute %.2f; cores: "
          "CPU time of the daemons / of the whole machine (%d cores) over the run's wall time / "
          "the simulated I/O threads' calibrated work over the simulated run" % (
              s["compute_ms"], s["link_ms"], s["critical_ms"], s["link_ms"] / s["compute_ms"],
              os.cpu_count() or 1))


def print_sweep(model, sweep, chunk, credit):
    print("\n== sweep: %s preemptive, chunk_bytes x credit_bytes -> measured ms / simulated ms"
          % model)
    credits = sorted({x[1] for x in sweep})
    chunks = sorted({x[0] for x in sweep})
    print("%-12s" % "chunk\\credit" + "".join(" | %17s" % fmt_size(c) for c in credits))
    for ch in chunks:
        cells = []
        for cr in credits:
            hit = [(x[2], x[3]) for x in sweep if x[0] == ch and x[1] == cr]
            mark = "*" if (ch, cr) == (chunk, credit) else " "
            cells.append(" | %7.1f / %7.1f%s" % (hit[0][0], hit[0][1]["iter_ms"], mark)
                         if hit else " | %17s" % "-")
        print("%-12s" % fmt_size(ch) + "".join(cells))
    best = min(sweep, key=lambda x: x[2])
    bsim = min(sweep, key=lambda x: x[3]["iter_ms"])
    print("* = the defaults used in the tables above; fastest measured: chunk %s credit %s "
          "(%.1f ms); fastest simulated: chunk %s credit %s (%.1f ms); machine busy %.2f-%.2f "
          "cores during the sweep" % (fmt_size(best[0]), fmt_size(best[1]), best[2],
                                      fmt_size(bsim[0]), fmt_size(bsim[1]), bsim[3]["iter_ms"],
                                      min(x[4] for x in sweep), max(x[4] for x in sweep)))


def print_targets(results):
    print("\n== targets")

    def get(model, mode):
        for r in results.get(model, {}).get("rows", []):
            if r[0] == mode:
                return r[1], r[2]
        return None

    for model, want in (("vgg16", 1.66), ("resnet50", 1.25)):
        f, p = get(model, "fifo"), get(model, "preemptive")
        if f and p:
            sp = f[0] / p[0]
            print("%-6s preemptive vs fifo on %s: %.2fx measured (sim %.2fx), target >= %.2fx" % (
                "MET" if sp >= want else "MISSED", model, sp, f[1]["iter_ms"] / p[1]["iter_ms"],
                want))
    for model in results:
        p = get(model, "preemptive")
        if p:
            r = p[0] / p[1]["bound_ms"]
            print("%-6s preemptive within 1.10x of the lower bound on %s: %.3fx (%.1f / %.1f ms; "
                  "sim %.3fx)" % ("MET" if r <= 1.10 else "MISSED", model, r, p[0],
                                  p[1]["bound_ms"], p[1]["iter_ms"] / p[1]["bound_ms"]))
    for model in results:
        for mode, meas, sim, _, _ in results[model]["rows"]:
            r = meas / sim["iter_ms"]
            print("%-6s %s %s measured within 10%% of simulated: %.3f (%.1f vs %.1f ms)" % (
                "MET" if abs(r - 1) <= 0.10 else "MISSED", model, mode, r, meas, sim["iter_ms"]))
