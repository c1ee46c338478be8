"""psrt-bench-priority --fit-calibration OUT: the calibration's second step, on the emulated
network. The loopback fit (psrt-bench-transport --calibrate) measures one worker and one server
alone on the machine; a cluster of W + S daemons sharing the cores pays more per message, and not
in the same proportion per byte (a copy costs what it costs; a wake-up costs more when the cores
are shared). So the fit scales the base file's per-message costs by a and its per-byte costs by b,
chosen to minimise sum over the measured runs of log(measured / simulated(a, b))^2 (psrt-sim with
the same profile, mode, chunk, credit and grouping): first one factor for both (its log over
[1/4, 16] on a grid of 33 points, then a golden section around the best), then a and b apart by
coordinate descent (the same on each log within 4x of the current value, two rounds). The file
records both factors and how it was made. Fit it on some profiles and judge it on others: the
bench's output names both. The base file is read as psrt-sim reads it and checked, with OUT,
before the first run (check).
"""

import math
import os
import re
import time

KEYS = ["worker_message_us", "server_message_us", "worker_byte_ns", "server_byte_ns"]


class CalibrationError(Exception):
    pass


def read_costs(path):
    """The four costs of a psrt-sim calibration file; one it leaves out is 0, as for psrt-sim.
    CalibrationError where the file cannot be read or a cost is not a number psrt-sim takes."""
    costs = {k: 0.0 for k in KEYS}
    if not path:
        return costs
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise CalibrationError("%s cannot be read: %s" % (path, e))
    doc = parse_yaml(text, path)
    if not isinstance(doc, dict):
        raise CalibrationError("%s: not a calibration (a mapping of %s)" % (path, ", ".join(KEYS)))
    for k in KEYS:
        if k not in doc:
            continue
        v = doc[k]
        try:
            costs[k] = float(v) if not isinstance(v, bool) else -1.0
        except (TypeError, ValueError):
            costs[k] = -1.0
        if not 0.0 <= costs[k] <= 1e6:  # psrt-sim's range (scheduler/sim/calibration.cc)
            raise CalibrationError("%s: %s is %r, not a number from 0 to 1e6" % (path, k, v))
    return costs


def parse_yaml(text, path):
    """The file as psrt-sim reads it (YAML: comments, flow style, quotes); python3-yaml where it
    is installed (deploy/install-deps.sh), else parse_plain: the driver needs only the library."""
    try:
        import yaml
    except ImportError:
        return parse_plain(text)
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise CalibrationError("%s: not valid YAML: %s" % (path, " ".join(str(e).split())))


def parse_plain(text):
    """{key: value text} of the top-level keys of a block mapping or of one flow mapping {...}:
    comments removed, quotes taken off, indented (nested) lines skipped."""
    lines = [re.sub(r"(^|\s)#.*", "", line).rstrip() for line in text.splitlines()]
    lines = [line for line in lines if line.strip() and line.strip() not in ("---", "...")]
    body = "\n".join(lines).strip()
    if body.startswith("{") and body.endswith("}"):
        items = body[1:-1].split(",")
    else:
        items = [line for line in lines if not line[0].isspace()]
    doc = {}
    for item in items:
        k, sep, v = item.partition(":")
        if sep:
            doc[k.strip().strip("'\"")] = v.strip().strip("'\"")
    return doc


def check(base_path, out):
    """What --fit-calibration needs, checked before any measurement (a bad file found after
    hours of runs loses them): a base file with costs to scale, and a file OUT can be written."""
    if not base_path:
        raise CalibrationError("--calibration none has no costs to scale: give a calibration file "
                               "(the default is bench/calibration/default.yaml)")
    base = read_costs(base_path)
    if not any(base.values()):
        raise CalibrationError("%s: its costs (%s) are all zero: there is nothing to scale" % (
            base_path, ", ".join(KEYS)))
    folder = os.path.dirname(os.path.abspath(out))
    if os.path.isdir(out):
        raise CalibrationError("%s is a folder: give the file to write" % out)
    if not os.path.isdir(folder):
        raise CalibrationError("%s: there is no folder %s to write it in" % (out, folder))
    if not os.access(folder, os.W_OK) or (os.path.exists(out) and not os.access(out, os.W_OK)):
        raise CalibrationError("%s cannot be written" % out)
    return base


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
