"""psrt_suite_cells: the cells of a suite (model x mode x workers) and running one as a real
job; results.csv read and appended row by row (the resume point)."""

import csv
import hashlib
import json
import os
import re
import shutil
import time

import psrt_bench as pb
import psrt_suite_config as sc

PROG = "psrt-bench-suite"
COLUMNS = ["model", "backend", "mode", "workers", "servers", "batch_size", "iterations",
           "ms_per_iter", "samples_per_s", "speedup_vs_bigdl", "scaling_efficiency",
           "bytes_per_iter", "received_bytes_per_iter", "sim_ms", "meas_over_sim", "runs_ms",
           "target_accuracy", "time_to_target_s", "target_iteration", "final_accuracy",
           "network", "load_1min", "finished_utc", "settings"]
NATIVE_LACO_STEADY = 25  # the runtime's LACO calibration (5) + warm-up (20) iterations


class ResultsError(Exception):
    pass


class Cell:
    def __init__(self, suite, model, mode, workers, index):
        self.model = model
        self.mode = mode
        self.workers = workers
        self.servers = sc.servers_for(suite, workers)
        self.index = index
        self.native = model["backend"] == "native"
        self.iterations = model["iterations"]
        self.batch_size = model["batch_size"]
        self.repeats = 1 if self.native else suite["repeats"]
        self.key = (model["name"], mode, workers, self.servers)
        self.label = "%s %s, %d worker%s, %d server%s" % (
            model["name"], mode, workers, "s"[:workers != 1], self.servers,
            "s"[:self.servers != 1])
        self.folder = "%s-%s-w%d-s%d" % (model["name"], mode.replace("+", "_"), workers,
                                         self.servers)
        self.sim = None
        self.sim_hint_ms = 100.0
        self.profile = None
        self.settings = settings_hash(suite, model, mode)


def settings_hash(suite, model, mode):
    """What decides a cell's figures besides its key: a changed suite is not mixed with old rows."""
    keep = {k: v for k, v in model.items() if k not in ("workers", "modes", "profile_path")}
    keys = ["link_rate", "link_ms", "comm_ratio", "reference_workers", "repeats", "chunk_bytes",
            "credit_bytes", "sim_iterations"] + (["laco"] if "laco" in mode else [])
    blob = json.dumps([keep, {k: suite[k] for k in keys}], sort_keys=True)
    return hashlib.sha1(blob.encode()).hexdigest()[:10]


def plan(suite):
    out = []
    for m in suite["models"]:
        for w in m["workers"]:
            for mode in m["modes"]:
                out.append(Cell(suite, m, mode, w, len(out) + 1))
    return out


# ---------------------------------------------------------------- results.csv
def read_results(path, plan_):
    """{key: row} of the finished cells in path; a row of a planned cell measured with other
    settings is a ResultsError (--fresh or another --out). A line that is not a whole row (cut by
    an interrupted write, or bytes that are not text) is said once and ignored: its cell reruns."""
    if not os.path.exists(path):
        return {}
    with open(path, "rb") as f:
        data = f.read()
    # bytes.splitlines: the rows end in \r\n (csv's default); a last line without its \n was
    # cut mid-write, however whole it looks
    lines = data.splitlines(True)
    if not lines or not lines[0].endswith(b"\n"):
        return {}  # not even the header was written whole: append_row starts the file again
    if parse_line(lines[0]) != COLUMNS:
        raise ResultsError("%s: line 1 is not the header of psrt-bench-suite's results.csv: "
                           "rerun with --fresh, or give another --out" % path)
    by_key = {c.key: c for c in plan_}
    done = {}
    for n, line in enumerate(lines[1:], start=2):
        row = whole_row(line)
        if row is None:
            pb.log(PROG, "%s line %d is incomplete (an interrupted write) or damaged: ignored" %
                   (path, n))
            continue
        key = (row["model"], row["mode"], int(row["workers"]), int(row["servers"]))
        c = by_key.get(key)
        if c is None:
            continue  # a cell this suite no longer has: kept in the file, not reported
        if row["settings"] != c.settings:
            raise ResultsError(
                "%s: cell '%s' was measured with other settings (%s, now %s): rerun with "
                "--fresh, or give another --out" % (path, c.label, row["settings"],
                                                    c.settings))
        done[key] = row
    return done


def parse_line(line):
    """The fields of one line of results.csv, or None where its bytes are not UTF-8."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return None
    fields = list(csv.reader([text]))
    return fields[0] if len(fields) == 1 else None


def whole_row(line):
    """{column: value} of a line that is a whole row, else None: cut (no line end, too few
    fields, a settings hash cut short), glued to another row or not text."""
    fields = parse_line(line) if line.endswith(b"\n") else None
    if fields is None or len(fields) != len(COLUMNS):
        return None
    row = dict(zip(COLUMNS, fields))
    try:
        # what the resume and the report compute with; the key's counts
        int(row["workers"]), int(row["servers"])
        float(row["ms_per_iter"]), float(row["samples_per_s"])
    except ValueError:
        return None
    return row if re.fullmatch(r"[0-9a-f]{10}", row["settings"]) else None


def drop_cut_line(path):
    """Removes a last line without its line end (a write cut short, ignored by read_results), so
    that the next row starts a line of its own instead of being glued to it and lost."""
    with open(path, "rb+") as f:
        data = f.read()
        if data and not data.endswith(b"\n"):
            f.truncate(data.rfind(b"\n") + 1)
            f.flush()
            os.fsync(f.fileno())


def append_row(path, row, done):
    """Fills in speedup over bigdl and scaling efficiency from the rows before, appends."""
    base = done.get((row["model"], "bigdl", row["workers"], row["servers"]))
    if row["mode"] == "bigdl":
        base = row
    if base:
        row["speedup_vs_bigdl"] = "%.3f" % (float(base["ms_per_iter"]) / float(row["ms_per_iter"]))
    ones = [r for k, r in done.items() if k[0] == row["model"] and k[1] == row["mode"]]
    w0 = min([int(r["workers"]) for r in ones] + [int(row["workers"])])
    one = row if int(row["workers"]) == w0 else next(
        r for r in ones if int(r["workers"]) == w0)
    row["scaling_efficiency"] = "%.3f" % (
        float(row["samples_per_s"]) / float(one["samples_per_s"]) * w0 / int(row["workers"]))
    if os.path.exists(path):
        drop_cut_line(path)
    new = not os.path.exists(path) or os.path.getsize(path) == 0
    with open(path, "a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        if new:
            w.writeheader()
        w.writerow({k: row.get(k, "") for k in COLUMNS})
        f.flush()
        os.fsync(f.fileno())
    return {k: str(row.get(k, "")) for k in COLUMNS}


def brief(row):
    text = "%s ms/iter, %s samples/s" % (row["ms_per_iter"], row["samples_per_s"])
    if row["sim_ms"]:
        text += ", simulated %s ms" % row["sim_ms"]
    if row["speedup_vs_bigdl"]:
        text += ", %sx bigdl" % row["speedup_vs_bigdl"]
    if row["target_accuracy"]:
        text += ", " + target_text(row)
    return text


def target_text(row):
    if row["time_to_target_s"]:
        return "%s reached at iteration %s after %s s" % (
            row["target_accuracy"], row["target_iteration"], row["time_to_target_s"])
    return "%s not reached in %s iterations (final %s)" % (
        row["target_accuracy"], row["iterations"], row["final_accuracy"] or "-")


# ---------------------------------------------------------------- network, profiles, simulator
def network(args, suite, net, out):
    """Bytes/s of a host link: measured once (netns) and kept in OUT/network.json, so that a
    resumed suite derives the same profiles; the nominal rate on loopback."""
    path = os.path.join(out, "network.json")
    mode = "netns" if net.netns else "loopback"
    nominal = pb.parse_rate(suite["link_rate"]) / 8.0
    if os.path.exists(path):
        old = json.load(open(path))
        if old.get("mode") != mode or old.get("rate") != suite["link_rate"]:
            raise ResultsError("%s: the results there were measured on %s at %s, this run is on "
                               "%s at %s: rerun with --fresh, or give another --out" % (
                                   out, old.get("mode"), old.get("rate"), mode,
                                   suite["link_rate"]))
        print("network: %s, %s per host link; goodput %.2f MB/s (measured by the first run of "
              "this suite)" % (mode, suite["link_rate"], old["goodput"] / 1e6))
        return old["goodput"]
    if net.netns:
        text = net.measure(max(int(nominal * 0.4), 1000000))
        goodput = net.goodput
        print("network: %d hosts in namespaces %s-h*, tbf %s per host link each way; measured "
              "TCP goodput %s" % (net.hosts, net.prefix, suite["link_rate"],
                                  text.split(": ", 1)[1]))
    else:
        goodput = nominal
        print("network: LOOPBACK (no namespaces: not root?), nothing shaped: the figures are "
              "functional checks only, not a comparison of the modes")
    with open(path, "w") as f:
        json.dump({"mode": mode, "rate": suite["link_rate"], "goodput": goodput}, f)
    return goodput


def prepare(args, suite, plan_, bandwidth, out):
    """Derived profiles (OUT/profiles) and the simulator's prediction of every replay cell."""
    os.makedirs(os.path.join(out, "profiles"), exist_ok=True)
    derived = {}
    for c in plan_:
        m = c.model
        if c.native:
            continue
        if m["name"] not in derived:
            derived[m["name"]] = derive(suite, m, bandwidth, out)
        c.profile = derived[m["name"]]
        sim_mode = c.mode.split("+")[0]
        sim = pb.simulate(args.bin_dir, c.profile, c.workers, c.servers, bandwidth, sim_mode,
                          suite["chunk_bytes"], suite["credit_bytes"], suite["sim_iterations"],
                          0.0, grouping="auto" if c.mode == "preemptive+grouping" else None)
        c.sim_hint_ms = sim["iter_ms"]
        c.sim = None if c.mode == "preemptive+laco" else sim  # psrt-sim has no codecs


def derive(suite, m, bandwidth, out):
    """The model's profile with times x k and scale s (psrt-bench-priority's method): at the
    reference worker count the busiest link carries link_ms of data per iteration and compute is
    link_ms / comm_ratio. One profile per model, for every worker count."""
    p = pb.read_profile(m["profile_path"])
    w = suite["reference_workers"] if suite["reference_workers"] in m["workers"] else max(
        m["workers"])
    busiest = max(1.0, float(w) / sc.servers_for(suite, w))
    scale = suite["link_ms"] / 1e3 * bandwidth / (p["bytes"] * busiest)
    compute = suite["link_ms"] / suite["comm_ratio"]
    k = compute / (p["compute_ms"] * scale)
    note = ("times x %.4g, scale %.4g: %.3f MB of gradients, compute %.1f ms per iteration; "
            "link/compute %.2f at %d workers" % (k, scale, p["bytes"] * scale / 1e6, compute,
                                                 suite["comm_ratio"], w))
    dst = os.path.join(out, "profiles", m["name"] + ".yaml")
    pb.derive_profile(m["profile_path"], dst, k, scale, note, PROG)
    print("profile %s: %s" % (m["name"], note))
    return dst


# ---------------------------------------------------------------- one cell
def job(suite, c, net, rundir, data):
    """The job file of one run of cell c (a dict for yaml.safe_dump)."""
    laco = c.mode == "preemptive+laco"
    d = {
        "job": {"id": "bench-suite", "iterations": c.iterations, "batch_size": c.batch_size,
                "evaluate": c.native, "log_every": c.model.get("eval_every", 0)},
        "cluster": {"servers": c.servers, "workers": c.workers,
                    "coordinator": "tcp://%s:0" % net.addr(0), "start_timeout_s": 60},
        "optimizer": {"type": "sgd", "lr": 0.01},
        "scheduler": {"mode": c.mode.split("+")[0],
                      "chunk_bytes": suite["chunk_bytes"], "credit_bytes": suite["credit_bytes"]},
        "timeline": os.path.join(rundir, "timeline"),
        "log_level": "info" if c.native else "warn",
    }
    if c.native:
        m = c.model
        d["job"].update({"seed": m["seed"], "eval_every": m["eval_every"]})
        d["model"] = {"backend": "native", "arch": m["name"]}
        if m["name"] == "vgg-small":
            d["model"]["dropout"] = m["dropout"]
        if m["name"] == "mlp":
            d["model"]["hidden"] = m["hidden"]
        d["data"] = {"path": data, "train_limit": m["train_limit"]}
        d["optimizer"] = {"type": "adam", "lr": m["lr"]}
    else:
        d["model"] = {"backend": "replay", "profile": c.profile}
    if c.mode == "preemptive+grouping":
        d["scheduler"]["grouping"] = "auto"  # GradOptimizer
    if laco:
        # Dense replies, as the study was first measured (laco's default is now compressed).
        d["compression"] = {"codec": "laco", "density": suite["laco"]["density"],
                            "replies": "dense"}
        if not c.native:  # native: the runtime's calibration and warm-up, for accuracy
            d["compression"].update({k: suite["laco"][k] for k in ("calibration_iters",
                                                                   "warmup_iters")})
    return d


def keep_line(line):
    return "PSRT_" in line or "test accuracy:" in line


def run_once(args, suite, c, net, rundir, cleanup):
    import yaml
    cfg = os.path.join(rundir, "job.yaml")
    try:
        os.makedirs(rundir)
        with open(cfg, "w") as f:
            yaml.safe_dump(job(suite, c, net, rundir, args.data), f, sort_keys=False)
    except OSError as e:  # a full disk was a traceback
        raise RuntimeError(pb.output_missing(e.filename or cfg, e))
    timeout = c.model.get("timeout_s") or (suite["timeout_s"] if not c.native else 3600.0)
    t0 = time.monotonic()
    try:
        readers = pb.run_daemons(net, args.bin_dir, cfg, rundir, c.servers, c.workers, timeout,
                                 c.folder, cleanup, keep_line)
    finally:
        cleanup.kill_children()
    r0 = readers[0]
    m = r0.find(r"PSRT_RESULT .*ms_per_iteration=([\d.]+) .*received_bytes=(\d+)")
    if not m:
        raise RuntimeError("%s: worker 0 printed no PSRT_RESULT" % c.folder)
    first = 0
    if c.mode == "preemptive+laco":
        first = NATIVE_LACO_STEADY if c.native else (suite["laco"]["calibration_iters"] +
                                                     suite["laco"]["warmup_iters"])
    pushed = pb.bytes_per_iteration(pb.pushed_bytes(os.path.join(rundir, "timeline"),
                                                    c.workers), min(first, c.iterations - 1))
    res = {"ms": float(m.group(1)), "received": int(m.group(2)) / float(c.iterations),
           "pushed": pushed, "evals": []}
    for stamp, line in zip(r0.stamps, r0.lines):
        e = re.search(r"PSRT_EVAL iteration=(\d+) accuracy=([\d.]+)", line)
        f = re.search(r"test accuracy: ([\d.]+)", line)
        if e:
            res["evals"].append((int(e.group(1)), float(e.group(2)), stamp - t0))
        elif f:
            res["evals"].append((c.iterations, float(f.group(1)), stamp - t0))
    return res


def run_cell(args, suite, c, net, out, cleanup):
    """Runs cell c (repeats times; the fastest run is reported: other processes only ever add
    time) in OUT/cells/FOLDER/run-N; returns its results.csv row (derived columns empty)."""
    folder = os.path.join(out, "cells", c.folder)
    shutil.rmtree(folder, ignore_errors=True)  # what an interrupted run left
    load = open("/proc/loadavg").read().split()[0]
    runs = [run_once(args, suite, c, net, os.path.join(folder, "run-%d" % i), cleanup)
            for i in range(c.repeats)]
    best = min(runs, key=lambda r: r["ms"])
    row = {"model": c.model["name"], "backend": c.model["backend"], "mode": c.mode,
           "workers": c.workers, "servers": c.servers, "batch_size": c.batch_size,
           "iterations": c.iterations, "ms_per_iter": "%.2f" % best["ms"],
           "samples_per_s": "%.1f" % (c.workers * c.batch_size * 1e3 / best["ms"]),
           "bytes_per_iter": "%.0f" % best["pushed"],
           "received_bytes_per_iter": "%.0f" % best["received"],
           "runs_ms": ";".join("%.2f" % r["ms"] for r in runs),
           "network": "netns" if net.netns else "loopback", "load_1min": load,
           "finished_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "settings": c.settings}
    if c.sim:
        row["sim_ms"] = "%.2f" % c.sim["iter_ms"]
        row["meas_over_sim"] = "%.3f" % (best["ms"] / c.sim["iter_ms"])
    if c.native:
        target = c.model["target_accuracy"]
        row["target_accuracy"] = "%.2f" % target
        hit = next((e for e in best["evals"] if e[1] >= target), None)
        if hit:
            row["target_iteration"], row["time_to_target_s"] = hit[0], "%.1f" % hit[2]
        if best["evals"]:
            row["final_accuracy"] = "%.4f" % best["evals"][-1][1]
    with open(os.path.join(folder, "row.json"), "w") as f:
        json.dump(row, f, indent=1)
    return row
