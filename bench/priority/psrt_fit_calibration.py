"""psrt-bench-priority --fit-calibration OUT: the calibration's second step, on the emulated
network. The loopback fit (psrt-bench-transport --calibrate) measures one worker and one server
alone on the machine; a cluster of W + S daemons sharing the cores pays more per message, and not
in the same proportion per byte (a copy costs what it costs; a wake-up costs more when the cores
are shared). So the fit scales the base file's per-message costs by a and its per-byte costs by b,
chosen to minimise sum over the measured runs of log(measured / simulated(a, b))^2 (psrt-sim with
the same profile, mode, chunk, credit and grouping): first one factor for both (its log over
[1/4, 16] on a grid of 33 points, then a golden section around the best), then a and b apart by
coordinate descent (the same on each log within 4x of the current value, two rounds). The file records both factors and how it
was made. Fit it on some profiles and judge it on others: the bench's output names both.
"""

import math
import os
import time

KEYS = ["worker_message_us", "server_message_us", "worker_byte_ns", "server_byte_ns"]


def read_costs(path):
    costs = {k: 0.0 for k in KEYS}
    if path:
        with open(path) as f:
            for line in f:
                k, _, v = line.partition(":")
                if k.strip() in costs:
                    costs[k.strip()] = float(v)
    return costs


def write_costs(path, costs, header):
    with open(path, "w") as f:
        for line in header:
            f.write("# %s\n" % line)
        for k in KEYS:
            f.write("%s: %.5f\n" % (k, costs[k]))


MESSAGE_KEYS = ["worker_message_us", "server_message_us"]


def scaled(base, a, b):
    return {k: v * (a if k in MESSAGE_KEYS else b) for k, v in base.items()}


def search(f, lo, hi, points, steps=8):
    """Minimum of f on [lo, hi]: f at `points` + 1 evenly spaced values first (psrt-sim's
    iteration time is not smooth in the costs: a golden section alone can stop in a local dip),
    then a golden section between the best one's neighbours. Returns (x, f(x))."""
    xs = [lo + (hi - lo) * i / points for i in range(points + 1)]
    fs = [f(x) for x in xs]
    i = min(range(len(xs)), key=lambda j: fs[j])
    best = (xs[i], fs[i])
    lo, hi = xs[max(0, i - 1)], xs[min(points, i + 1)]
    g = (math.sqrt(5) - 1) / 2
    a, b = hi - g * (hi - lo), lo + g * (hi - lo)
    fa, fb = f(a), f(b)
    for _ in range(steps):
        if fa < fb:
            hi, b, fb = b, a, fa
            a = hi - g * (hi - lo)
            fa = f(a)
        else:
            lo, a, fa = a, b, fb
            b = lo + g * (hi - lo)
            fb = f(b)
    for x, fx in ((a, fa), (b, fb)):
        if fx < best[1]:
            best = (x, fx)
    return best


def fit(base_path, runs, simulate, out, workdir, log):
    """runs: list of (label, measured ms, simulate args); simulate(args, calibration path) -> ms.
    Returns the factors (per message, per byte)."""
    base = read_costs(base_path)
    trial = os.path.join(workdir, "calibration-trial.yaml")

    def cost(log_a, log_b):
        write_costs(trial, scaled(base, math.exp(log_a), math.exp(log_b)), ["trial"])
        return sum(math.log(meas / simulate(args, trial)) ** 2 for _, meas, args in runs)

    one, f_one = search(lambda x: cost(x, x), math.log(0.25), math.log(16.0), 32)
    log_a, log_b, best = one, one, f_one
    for _ in range(2):
        log_a, best = search(lambda x: cost(x, log_b), log_a - math.log(4), log_a + math.log(4), 12)
        log_b, best = search(lambda x: cost(log_a, x), log_b - math.log(4), log_b + math.log(4), 12)
    if best > f_one:  # the descent never ends worse than the single factor it started from
        log_a, log_b, best = one, one, f_one
    a, b = math.exp(log_a), math.exp(log_b)
    rms = math.sqrt(best / max(1, len(runs)))
    rms_one = math.sqrt(f_one / max(1, len(runs)))
    write_costs(out, scaled(base, a, b), [
        "psrt-sim calibration fitted on the emulated network by psrt-bench-priority "
        "--fit-calibration (bench/priority/psrt_fit_calibration.py), %s" %
        time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "base: %s, per-message costs times %.4f, per-byte costs times %.4f (one factor for both: "
        "%.4f, rms %.4f)" % (base_path or "none", a, b, math.exp(one), rms_one),
        "runs fitted (%d): %s" % (len(runs), ", ".join(r[0] for r in runs)),
        "rms of log(measured / simulated) after the fit: %.4f" % rms])
    log("calibration fitted on %d runs: costs of %s times %.3f per message and %.3f per byte "
        "(rms log ratio %.3f; one factor %.3f: %.3f) -> %s" %
        (len(runs), base_path, a, b, rms, math.exp(one), rms_one, out))
    return a, b
