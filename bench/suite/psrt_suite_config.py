"""psrt_suite_config: reads and validates a psrt-bench-suite file (YAML; keys in
bench/suite/README.md). Like every psrt config: an unknown key or a bad value is one line naming
the file, the key, the value and what is allowed (SuiteError; the driver exits 2)."""

import math
import os

import psrt_bench as pb

MODES = ["bigdl", "fifo", "nonpreemptive", "preemptive", "preemptive+laco", "preemptive+grouping"]
DEFAULT_MODES = MODES[:5]  # preemptive+grouping (scheduler.grouping: auto) when a suite names it
NATIVE_ARCHS = ["vgg-small", "lenet5", "mlp"]


class SuiteError(Exception):
    pass


def _fail(key, value, allowed):
    raise SuiteError("%s: %r is not allowed: %s" % (key, value, allowed))


def _int(key, v, lo):
    if isinstance(v, bool) or not isinstance(v, int) or v < lo:
        _fail(key, v, "an integer >= %d" % lo)
    return v


def _num(key, v, lo, hi=None):
    # NaN compared false with both bounds, and infinity had no upper one: both passed.
    if (isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v)
            or v <= lo or (hi is not None and v > hi)):
        _fail(key, v, "a finite number > %g%s" % (lo, " and <= %g" % hi if hi is not None else ""))
    return float(v)


def _size(key, v):
    try:
        b = pb.parse_size(v)
    except Exception:
        _fail(key, v, "a size (4096, 64KiB, 1MiB)")
    if b < 1:
        _fail(key, v, "a size of at least 1 byte")
    return b


def _rate(key, v):
    try:
        pb.parse_rate(v)
    except Exception:
        _fail(key, v, "a tc rate above zero (e.g. 500mbit, 1gbit)")
    return str(v)


def _ints(key, v, lo):
    if not isinstance(v, list) or not v:
        _fail(key, v, "a non-empty list of integers >= %d" % lo)
    out = [_int("%s[%d]" % (key, i), x, lo) for i, x in enumerate(v)]
    if len(set(out)) != len(out):
        _fail(key, v, "a list without repeats")
    return sorted(out)


def _widths(key, v):
    if not isinstance(v, list) or not v:
        _fail(key, v, "a non-empty list of layer widths")
    return [_int("%s[%d]" % (key, i), x, 1) for i, x in enumerate(v)]


def _modes(key, v):
    if not isinstance(v, list) or not v:
        _fail(key, v, "a non-empty list of: " + ", ".join(MODES))
    for i, m in enumerate(v):
        if m not in MODES:
            _fail("%s[%d]" % (key, i), m, "one of: " + ", ".join(MODES))
    return [m for m in MODES if m in v]  # bigdl first: the baseline of every speedup


def _servers(key, v):
    """An integer (fixed) or {per_workers: k}: one server per k workers, at least one."""
    if isinstance(v, dict):
        _keys(key, v, {"per_workers"})
        if "per_workers" not in v:
            _fail(key, v, "an integer or {per_workers: K}")
        return {"per_workers": _int(key + ".per_workers", v["per_workers"], 1)}
    return {"fixed": _int(key, v, 1)}


def _keys(where, d, allowed):
    if not isinstance(d, dict):
        _fail(where or "the file", d, "a mapping")
    for k in d:
        if k not in allowed:
            raise SuiteError("%s%s: unknown key (allowed: %s)" % (
                where + "." if where else "", k, ", ".join(sorted(allowed))))


TOP = {
    "name": ("", None),
    "models": (None, None),
    "modes": (list(DEFAULT_MODES), _modes),
    "workers": ([1, 2, 4, 8], lambda k, v: _ints(k, v, 1)),
    "servers": ({"per_workers": 4}, _servers),
    "link_rate": ("500mbit", _rate),
    "link_ms": (120.0, lambda k, v: _num(k, v, 0)),
    "comm_ratio": (1.5, lambda k, v: _num(k, v, 0)),
    "reference_workers": (0, lambda k, v: _int(k, v, 0)),
    "iterations": (20, lambda k, v: _int(k, v, 2)),
    "repeats": (2, lambda k, v: _int(k, v, 1)),
    "batch_size": (32, lambda k, v: _int(k, v, 1)),
    "chunk_bytes": (64 * 1024, _size),
    "credit_bytes": (256 * 1024, _size),
    "timeout_s": (180.0, lambda k, v: _num(k, v, 0)),
    "sim_iterations": (8, lambda k, v: _int(k, v, 2)),
    "laco": ({}, None),
}
LACO = {
    "density": (0.01, lambda k, v: _num(k, v, 0, 1)),
    "calibration_iters": (2, lambda k, v: _int(k, v, 1)),
    "warmup_iters": (2, lambda k, v: _int(k, v, 0)),
}
MODEL = {  # None: inherited from the top level
    "name": (None, None),
    "backend": ("replay", None),
    "profile": ("", None),
    "workers": (None, lambda k, v: _ints(k, v, 1)),
    "modes": (None, _modes),
    "iterations": (None, lambda k, v: _int(k, v, 2)),
    "batch_size": (None, lambda k, v: _int(k, v, 1)),
    "timeout_s": (None, lambda k, v: _num(k, v, 0)),
}
NATIVE = {
    "target_accuracy": (0.90, lambda k, v: _num(k, v, 0, 1)),
    "eval_every": (100, lambda k, v: _int(k, v, 1)),
    "lr": (0.001, lambda k, v: _num(k, v, 0)),
    "dropout": (0.5, lambda k, v: _num(k, v, -1e-12, 0.99)),
    "train_limit": (0, lambda k, v: _int(k, v, 0)),
    "hidden": ([256, 128], lambda k, v: _widths(k, v)),
    "seed": (1, lambda k, v: _int(k, v, 0)),
}


def _section(where, d, schema):
    out = {}
    for k, (default, check) in schema.items():
        key = "%s.%s" % (where, k) if where else k
        if k in d and check:
            out[k] = check(key, d[k])
        elif k in d:
            out[k] = d[k]
        else:
            out[k] = default
    return out


def _model(i, m, suite, profiles):
    where = "models[%d]" % i
    _keys(where, m, set(MODEL) | set(NATIVE))
    if "name" not in m or not isinstance(m["name"], str) or not m["name"]:
        _fail(where + ".name", m.get("name"), "a name (a profile in bench/profiles, or a "
              "native arch)")
    where = "models[%d] (%s)" % (i, m["name"])
    out = _section(where, m, MODEL)
    if out["backend"] not in ("replay", "native"):
        _fail(where + ".backend", out["backend"], "one of: replay, native")
    for k in ("workers", "modes", "iterations", "batch_size"):
        if out[k] is None:
            out[k] = suite[k] if k != "batch_size" or out["backend"] == "replay" else 64
    if out["backend"] == "replay":
        for k in NATIVE:
            if k in m:
                raise SuiteError("%s.%s: only for backend: native" % (where, k))
        out["profile"] = out["profile"] or m["name"]
        path = os.path.join(profiles, out["profile"] + ".yaml")
        if not os.path.exists(path):
            _fail(where + ".profile", out["profile"], "a profile in %s" % profiles)
        out["profile_path"] = path
    else:
        if m["name"] not in NATIVE_ARCHS:
            _fail(where + ".name", m["name"], "for backend native one of: " +
                  ", ".join(NATIVE_ARCHS))
        if "profile" in m:
            raise SuiteError("%s.profile: only for backend: replay" % where)
        out.update(_section(where, m, NATIVE))
    return out


def load(path, profiles):
    """The suite in path as a dict with every default filled in. Raises SuiteError."""
    import yaml  # python3-yaml (deploy/install-deps.sh); only the suite driver needs it
    try:
        with open(path, encoding="utf-8") as f:
            d = yaml.safe_load(f)
    except OSError as e:
        raise SuiteError("cannot read: %s" % e.strerror)
    except UnicodeDecodeError as e:  # a traceback before
        raise SuiteError("not UTF-8 text (byte %d: 0x%02x)" % (e.start, e.object[e.start]))
    except yaml.YAMLError as e:
        raise SuiteError("not YAML: %s" % str(e).replace("\n", " "))
    _keys("", d, set(TOP))
    suite = _section("", d, TOP)
    suite["name"] = str(suite["name"] or os.path.splitext(os.path.basename(path))[0])
    _keys("laco", suite["laco"], set(LACO))
    suite["laco"] = _section("laco", suite["laco"], LACO)
    if suite["reference_workers"] and suite["reference_workers"] not in suite["workers"]:
        _fail("reference_workers", suite["reference_workers"], "one of workers %s (0: the "
              "largest)" % suite["workers"])
    suite["reference_workers"] = suite["reference_workers"] or max(suite["workers"])
    ms = d.get("models")
    if not isinstance(ms, list) or not ms:
        _fail("models", ms, "a non-empty list of {name: ..., backend: replay|native, ...}")
    suite["models"] = [_model(i, m, suite, profiles) for i, m in enumerate(ms)]
    names = [m["name"] for m in suite["models"]]
    if len(set(names)) != len(names):
        _fail("models", names, "each name once")
    return suite


def servers_for(suite, workers):
    rule = suite["servers"]
    if "fixed" in rule:
        return rule["fixed"]
    return max(1, -(-workers // rule["per_workers"]))
