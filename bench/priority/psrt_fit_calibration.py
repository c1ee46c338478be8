"""psrt-bench-priority --fit-calibration OUT: the calibration's second step, on the emulated
network. The loopback fit (psrt-bench-transport --calibrate) measures one worker and one server
alone on the machine; a cluster of W + S daemons sharing the cores pays more per message. This
scales every cost of the base file by one factor a, chosen by golden-section search on log(a) to
minimise sum over the measured runs of log(measured / simulated(a))^2 (psrt-sim with the same
profile, mode, chunk, credit and grouping), and writes the scaled file with how it was made.
Fit it on some profiles and judge it on others: the bench's output names both.
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


def fit(base_path, runs, simulate, out, workdir, log):
    """runs: list of (label, measured ms, simulate args); simulate(args, calibration path) -> ms.
    Returns the factor."""
    base = read_costs(base_path)
    trial = os.path.join(workdir, "calibration-trial.yaml")

    def cost(log_a):
        write_costs(trial, {k: v * math.exp(log_a) for k, v in base.items()}, ["trial"])
        return sum(math.log(meas / simulate(args, trial)) ** 2 for _, meas, args in runs)

    lo, hi = math.log(0.25), math.log(16.0)
    g = (math.sqrt(5) - 1) / 2
    a, b = hi - g * (hi - lo), lo + g * (hi - lo)
    fa, fb = cost(a), cost(b)
    for _ in range(14):
        if fa < fb:
            hi, b, fb = b, a, fa
            a = hi - g * (hi - lo)
            fa = cost(a)
        else:
            lo, a, fa = a, b, fb
            b = lo + g * (hi - lo)
            fb = cost(b)
    log_a = a if fa < fb else b
    factor = math.exp(log_a)
    rms = math.sqrt(min(fa, fb) / max(1, len(runs)))
    write_costs(out, {k: v * factor for k, v in base.items()}, [
        "psrt-sim calibration fitted on the emulated network by psrt-bench-priority "
        "--fit-calibration (bench/priority/psrt_fit_calibration.py), %s" %
        time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "base: %s, every cost times %.4f" % (base_path or "none", factor),
        "runs fitted (%d): %s" % (len(runs), ", ".join(r[0] for r in runs)),
        "rms of log(measured / simulated) after the fit: %.4f" % rms])
    log("calibration fitted on %d runs: costs of %s times %.3f (rms log ratio %.3f) -> %s" %
        (len(runs), base_path, factor, rms, out))
    return factor
