"""psrt_suite_report: summary.md (a table per model, time to accuracy, the target line) and the
gnuplot charts of a suite's results (scalability.png, iteration_time.png, speedup.png)."""

import os
import platform

import psrt_bench as pb

PROG = "psrt-bench-suite"
TARGET = ("vgg16", "VGG-16", 8, 2.0)  # preemptive at least 2x bigdl at 8 workers, measured


def machine():
    cpu = "unknown CPU"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return "%s (%s, %d cores)" % (platform.node(), cpu, os.cpu_count() or 1)


def target_line(rows):
    model, name, workers, want = TARGET
    b = [r for r in rows if r["model"] == model and r["mode"] == "bigdl" and
         int(r["workers"]) == workers]
    p = [r for r in rows if r["model"] == model and r["mode"] == "preemptive" and
         int(r["workers"]) == workers]
    what = "preemptive at least %.0fx bigdl at %d workers on %s, measured" % (want, workers,
                                                                            name)
    if not b or not p:
        return "NOT RUN %s: this suite has no such cells" % what
    sp = float(b[0]["ms_per_iter"]) / float(p[0]["ms_per_iter"])
    sim = ""
    if b[0]["sim_ms"] and p[0]["sim_ms"]:
        sim = "; simulated %.2fx" % (float(b[0]["sim_ms"]) / float(p[0]["sim_ms"]))
    warn = " (LOOPBACK: functional only)" if p[0]["network"] != "netns" else ""
    return "%s %s: %.2fx (%s vs %s ms per iteration%s)%s" % (
        "MET" if sp >= want else "MISSED", what, sp, b[0]["ms_per_iter"], p[0]["ms_per_iter"],
        sim, warn)


def fmt(v, spec, none="-"):
    return spec % float(v) if v not in ("", None) else none


def model_table(rows):
    out = ["| workers | servers | mode | ms/iter | samples/s | speedup vs bigdl | scaling "
           "efficiency | pushed kB/iter/worker | simulated ms | measured/simulated |",
           "| ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        out.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["workers"], r["servers"], r["mode"], fmt(r["ms_per_iter"], "%.1f"),
            fmt(r["samples_per_s"], "%.0f"), fmt(r["speedup_vs_bigdl"], "%.2fx"),
            fmt(r["scaling_efficiency"], "%.2f"), "%.1f" % (float(r["bytes_per_iter"]) / 1e3),
            fmt(r["sim_ms"], "%.1f"),
            fmt(r["meas_over_sim"], "%.2f")))
    return out


def accuracy_table(rows):
    out = ["| workers | servers | mode | reached at iteration | wall time to target | ms/iter "
           "(evaluations included) | final accuracy |",
           "| ---: | ---: | --- | ---: | ---: | ---: | ---: |"]
    for r in rows:
        reached = r["time_to_target_s"]
        out.append("| %s | %s | %s | %s | %s | %s | %s |" % (
            r["workers"], r["servers"], r["mode"],
            r["target_iteration"] if reached else "not reached in %s iterations" % r["iterations"],
            ("%s s" % reached) if reached else "-", fmt(r["ms_per_iter"], "%.1f"),
            r["final_accuracy"] or "-"))
    return out


def summary(suite, plan, rows, netns):
    models = suite["models"]
    stamps = sorted(r["finished_utc"] for r in rows)
    lines = ["# Suite `%s`: psrt's scheduling modes against BigDL's synchronisation" % suite["name"],
             "",
             "Measured %s to %s on %s. %d of %d cells." % (
                 stamps[0] if stamps else "-", stamps[-1] if stamps else "-", machine(),
                 len(rows), len(plan)),
             ""]
    loads = sorted(float(r["load_1min"]) for r in rows if r["load_1min"])
    if loads:
        lines += ["The machine's load average (1 min) as the cells started: %.1f to %.1f, median "
                  "%.1f (%d cores; other processes only ever add time, more to the modes that "
                  "send more messages)." % (loads[0], loads[-1], loads[len(loads) // 2],
                                            os.cpu_count() or 1), ""]
    if netns:
        lines.append("Network: every server and worker in its own network namespace behind a "
                     "tbf-shaped %s link each way (deploy/netem/emunet.sh)." % suite["link_rate"])
    else:
        lines.append("**Network: LOOPBACK, nothing shaped: these figures are functional checks "
                     "only, not a comparison of the modes (run as root for the emulated "
                     "network).**")
    sv = suite["servers"]
    lines += ["", "Replay models: compute emulated from bench/profiles scaled so that at %d "
              "workers the busiest link carries %.0f ms of data per iteration and compute is "
              "that / %.2f; %d iterations per run (worker 0's steady state), best of %d runs; "
              "batch %d per worker; chunk %s, credit %s; servers: %s; LACO density %g. "
              "Simulated: psrt-sim on the same profile, cluster and measured goodput (no codec "
              "model, so none for preemptive+laco)." % (
                  suite["reference_workers"], suite["link_ms"], suite["comm_ratio"],
                  suite["iterations"], suite["repeats"], suite["batch_size"],
                  pb.fmt_size(suite["chunk_bytes"]), pb.fmt_size(suite["credit_bytes"]),
                  ("%d" % sv["fixed"]) if "fixed" in sv else
                  "one per %d workers" % sv["per_workers"], suite["laco"]["density"]),
              "", "BigDL itself cannot run here (no Spark); mode `bigdl` reproduces its "
              "synchronisation: the whole backward pass, then every gradient out in parameter "
              "order, then every new parameter back, then the next forward (no overlap of "
              "communication and compute).", ""]
    for m in models:
        mine = [r for c in plan for r in rows if (r["model"], r["mode"], int(r["workers"]),
                                                 int(r["servers"])) == c.key and
                c.model is m]
        if not mine:
            continue
        lines += ["## %s (%s)" % (m["name"], m["backend"]), ""]
        lines += model_table(mine)
        if m["backend"] == "native":
            lines += ["", "Time to %.2f test accuracy (worker 0 evaluates every %d iterations; "
                      "wall time from the job's start, evaluations included):" % (
                          m["target_accuracy"], m["eval_every"]), ""]
            lines += accuracy_table(mine)
        lines.append("")
    lines += ["## Target", "", "```", target_line(rows), "```", "",
              "Charts: scalability.png (samples/s against workers), iteration_time.png, "
              "speedup.png. Per cell: cells/CELL/run-N/ (job file, daemon logs, timeline).", ""]
    return "\n".join(lines)


def write(suite, plan, rows_by_key, out, netns):
    order = {c.key: c.index for c in plan}
    rows = sorted((r for k, r in rows_by_key.items() if k in order), key=lambda r: order[(
        r["model"], r["mode"], int(r["workers"]), int(r["servers"]))])
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write(summary(suite, plan, rows, netns))
    print("\n" + target_line(rows), flush=True)
    print("summary: %s" % os.path.join(out, "summary.md"), flush=True)
    import psrt_suite_plots
    for png in psrt_suite_plots.plot(suite, rows, out):
        print("chart: %s" % png, flush=True)
