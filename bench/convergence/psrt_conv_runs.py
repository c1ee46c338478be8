"""psrt-bench-convergence's runs: the job file, one psrt-launch run and what it printed, the
codecs' convergence runs (bytes matched by probes, several seeds). Standard library only."""

import os
import re
import shutil
import subprocess
import time

import psrt_bench as pb

PROG = "psrt-bench-convergence"
# Runs in this order (the matched ones need the run they match). "laco@signsgd": LACO at the
# density that gives signSGD's bytes (signSGD is fixed at 1 bit per element); "laco+replies":
# LACO with compressed parameter replies (compression.replies).
CODECS = ["none", "laco", "signsgd", "laco@signsgd", "graddrop", "topk", "laco+replies"]
LABELS = {"none": "none (fp32)", "laco": "LACO", "signsgd": "signSGD (EF)",
          "laco@signsgd": "LACO @ signSGD B", "graddrop": "Gradient Dropping", "topk": "top-k",
          "laco+replies": "LACO + replies"}


def codec_of(run):
    """compression.codec of a run name ("laco@signsgd" and "laco+replies" are LACO runs)."""
    return run.split("@")[0].split("+")[0]


parse_rate, tail = pb.parse_rate, pb.tail
pushed_bytes, bytes_per_iteration = pb.pushed_bytes, pb.bytes_per_iteration
CLEANUP = pb.Cleanup(PROG, kill_timeout_s=5)


def log(msg):
    pb.log(PROG, msg)


def fmt_bytes(b):
    if b >= 1e6:
        return "%.2f MB" % (b / 1e6)
    if b >= 1e3:
        return "%.1f kB" % (b / 1e3)
    return "%.0f B" % b


# ---------------------------------------------------------------- convergence runs (psrt-launch)
def job_yaml(args, iterations=None):
    hidden = "[%s]" % ", ".join(str(h) for h in args.hidden)
    epochs_or_iters = ("iterations: %d" % iterations) if iterations else (
        "epochs: %s" % repr(args.epochs))
    return """job:
  id: bench-convergence
  %s
  batch_size: %d
  seed: %d
  log_every: 0
  eval_every: %d
cluster:
  servers: %d
  workers: %d
  coordinator: tcp://127.0.0.1:0
  start_timeout_s: 60
model:
  backend: native
  arch: %s
  hidden: %s
data:
  path: %s
  train_limit: %d
optimizer:
  type: %s
  lr: %s
%sscheduler:
  mode: %s
compression:
  codec: none
  density: %s
  replies: dense
log_level: info
""" % (epochs_or_iters, args.batch_size, args.seed, 0 if iterations else args.eval_every,
       args.servers, args.workers, args.arch, hidden, args.data, args.train_limit,
       args.optimizer, repr(args.lr),
       ("  momentum: %s\n" % repr(args.momentum)) if args.optimizer == "sgd" else "", args.mode,
       repr(args.density))


def launch(args, cfg, sets, tag, workdir, timeout):
    """Runs one job with psrt-launch; returns a dict of what worker 0 and the workers printed."""
    rundir = os.path.join(workdir, tag)
    os.makedirs(rundir, exist_ok=True)
    timeline = os.path.join(rundir, "timeline")
    shutil.rmtree(timeline, ignore_errors=True)
    argv = [os.path.join(args.bin_dir, "psrt-launch"), cfg, "--set", "timeline=" + timeline]
    for s in sets:
        argv += ["--set", s]
    logpath = os.path.join(rundir, "launch.log")
    with open(os.path.join(rundir, "command"), "w") as f:
        f.write(" ".join(argv) + "\n")

    def keep(line):
        return "PSRT_" in line or "test accuracy:" in line or "pushed" in line

    with CLEANUP.hold():
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, text=True, start_new_session=True)
        CLEANUP.children.append(p)
    reader = pb.Reader(p.stdout, logpath, keep)
    reader.start()
    t0 = time.monotonic()
    try:
        p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        CLEANUP.kill_children()
        raise RuntimeError("%s: still running after %.0f s (log: %s)" % (tag, timeout, logpath))
    reader.join(10)
    wall = time.monotonic() - t0
    CLEANUP.children.remove(p)
    if p.returncode != 0:
        raise RuntimeError("%s: psrt-launch exited with %d:\n%s" % (tag, p.returncode,
                                                                    tail(logpath, 12)))
    res = {"wall": wall, "evals": [], "accuracy": None, "pushed_mib": [], "timeline": timeline}
    for line in reader.lines:
        m = re.search(r"worker 0 \| PSRT_EVAL iteration=(\d+) accuracy=([\d.]+)", line)
        if m:
            res["evals"].append((int(m.group(1)), float(m.group(2))))
        m = re.search(r"worker 0 \| PSRT_RESULT iterations=(\d+) seconds=([\d.]+) "
                      r"ms_per_iteration=([\d.]+)", line)
        if m:
            res["iterations"] = int(m.group(1))
            res["seconds"] = float(m.group(2))
            res["ms_per_iteration"] = float(m.group(3))
        m = re.search(r"worker 0 \| PSRT_RESULT .*received_bytes=(\d+)", line)
        if m:
            res["received_bytes"] = int(m.group(1)) / max(1, res.get("iterations", 1))
        m = re.search(r"worker 0 \| test accuracy: ([\d.]+)", line)
        if m:
            res["accuracy"] = float(m.group(1))
        m = re.search(r"pushed ([\d.]+) MiB", line)
        if m:
            res["pushed_mib"].append(float(m.group(1)))
    if "iterations" not in res:
        raise RuntimeError("%s: worker 0 printed no PSRT_RESULT (log: %s)" % (tag, logpath))
    res["bytes"] = pushed_bytes(timeline, args.workers)
    return res


def steady_from(args):
    """First iteration counted as steady state: after LACO's calibration and warm-up."""
    return args.calibration_iters + args.warmup_iters


def mc_sets(args, codec):
    """The momentum-correction setting of a run of `codec` (a compression.codec)."""
    return (["compression.momentum_correction=true"] if codec in args.momentum_correction
            else [])


def label(args, run):
    """A row's name: the codec's label, marked where the workers apply the momentum."""
    return LABELS[run] + (" (MC)" if codec_of(run) in args.momentum_correction else "")


def probe_density(args, cfg, codec, target_bytes, workdir, extra=()):
    """Density at which `codec` pushes about target_bytes per iteration per worker, from short
    runs (bytes are nearly proportional to the density; index bytes per element grow a little
    as it falls, so the second probe corrects the first). LACO's bytes count after its
    calibration and warm-up."""
    d = args.density
    first = min(10, args.probe_iterations // 4)
    if codec == "laco":
        first = min(steady_from(args), args.probe_iterations - 10)
    for round_ in range(args.probe_rounds):
        r = launch(args, cfg, args.set + list(extra) + mc_sets(args, codec) + [
                              "job.iterations=%d" % args.probe_iterations, "job.evaluate=false",
                               "job.eval_every=0", "compression.codec=" + codec,
                               "compression.density=%.6g" % d],
                   "probe-%s-%d" % (codec, round_), workdir, args.run_timeout_s)
        b = bytes_per_iteration(r["bytes"], first)
        new = min(1.0, d * target_bytes / b)
        log("probe %s: density %.5f -> %.0f B per iteration (target %.0f): next %.5f" %
            (codec, d, b, target_bytes, new))
        d = float("%.3g" % new)
    return d


def opt_text(args, short=False):
    if args.optimizer == "sgd":
        mc = ""
        if args.momentum_correction:
            mc = (" (MC: on the workers)" if short else
                  " (applied by the workers for %s: momentum correction, MC)" %
                  ", ".join(args.momentum_correction))
        return "sgd lr %g momentum %g%s" % (args.lr, args.momentum, mc)
    return "%s lr %g" % (args.optimizer, args.lr)


def model_text(args):
    if args.arch == "mlp":
        return "MLP 784-%s-10" % "-".join(str(h) for h in args.hidden)
    return {"lenet5": "LeNet-5"}.get(args.arch, args.arch)


def convergence(args, workdir):
    cfg = os.path.join(workdir, "job.yaml")
    with open(cfg, "w") as f:
        f.write(job_yaml(args))
    comp = ["compression.calibration_iters=%d" % args.calibration_iters,
            "compression.warmup_iters=%d" % args.warmup_iters,
            "compression.dense_below=%d" % args.dense_below]
    print("job: %s, Fashion-MNIST (%s training images), %d workers x batch %d, "
          "%d server(s), %s, seed %d, %s, mode %s; error feedback on for every codec; "
          "LACO calibration %d + warm-up %d iterations, dense below %d elements" % (
              model_text(args),
              args.train_limit or "all 60000", args.workers, args.batch_size, args.servers,
              opt_text(args), args.seed,
              ("%d iterations" % args.iterations) if args.iterations else
              ("%s epochs" % args.epochs), args.mode, args.calibration_iters, args.warmup_iters,
              args.dense_below),
          flush=True)
    if args.set:
        print("extra settings for every run: " + " ".join(args.set))
    runs = {}
    densities = {"none": None, "laco": args.density, "signsgd": None, "laco@signsgd": None,
                 "graddrop": args.graddrop_density, "topk": args.topk_density,
                 "laco+replies": args.density}
    order = [c for c in CODECS if c in args.codecs]  # none and laco first: the others match LACO
    common = comp + (["job.iterations=%d" % args.iterations] if args.iterations else []) + args.set
    for codec in order:
        d = densities[codec]
        if codec in ("graddrop", "topk") and d is None:
            if "laco" in runs:
                d = probe_density(args, cfg, codec, runs["laco"]["steady_bytes"], workdir)
            else:
                d = args.density
            densities[codec] = d
        if codec == "laco@signsgd":
            if "signsgd" not in runs:
                log("laco@signsgd needs the signsgd run: skipped")
                continue
            d = probe_density(args, cfg, "laco", runs["signsgd"]["steady_bytes"], workdir, comp)
            densities[codec] = d
        sets = common + ["compression.codec=" + codec_of(codec)] + mc_sets(args, codec_of(codec))
        if codec.endswith("+replies"):
            sets.append("compression.replies=compressed")
        if d is not None:
            sets.append("compression.density=%.6g" % d)
        per_seed = []
        for k in range(args.seeds):
            seed = args.seed + k
            t0 = time.monotonic()
            tag = codec if k == 0 else "%s-seed%d" % (codec, seed)
            r = launch(args, cfg, sets + ["job.seed=%d" % seed], tag, workdir, args.run_timeout_s)
            r["density"] = d
            r["steady_bytes"] = bytes_per_iteration(r["bytes"], steady_from(args))
            r["all_bytes"] = bytes_per_iteration(r["bytes"], 0)
            per_seed.append(r)
            log("%s (seed %d): accuracy %s, %.0f B per iteration per worker after iteration %d "
                "(%.0f over the run), %d iterations in %.1f s (%.0f s with start and "
                "evaluations)" % (
                    codec, seed, r["accuracy"], r["steady_bytes"], steady_from(args),
                    r["all_bytes"], r["iterations"], r["seconds"], time.monotonic() - t0))
        # Bytes and the plotted curve: the first seed; accuracies: the mean over the seeds.
        r = dict(per_seed[0])
        if len(per_seed) > 1:
            r["finals"] = [x["accuracy"] for x in per_seed]
            r["accuracy"] = sum(r["finals"]) / len(r["finals"])
            r["last_mean"] = sum(last_mean(x, args.smooth) for x in per_seed) / len(per_seed)
        runs[codec] = r
    return runs


def last_mean(r, n):
    if "last_mean" in r:  # a mean over seeds, computed from each seed's evaluations
        return r["last_mean"]
    pts = [a for _, a in r["evals"]] + ([r["accuracy"]] if r["accuracy"] is not None else [])
    pts = pts[-n:]
    return sum(pts) / len(pts) if pts else float("nan")


