"""psrt_bench: what the Python bench drivers share, written once: cleanup of children and of the
emulated network (psrt_bench_cleanup.py, re-exported), the network itself (deploy/netem/emunet.sh), derived replay profiles, reading a
daemon's output, starting a job's daemons in their namespaces, bytes per iteration from the
workers' timelines, psrt-sim, and gnuplot's terminal. Standard library only. CMake copies this file
next to the drivers (build/bin); a driver run from the source tree finds it in ../common. See
bench/common/README.md.
"""

import argparse
import os
import re
import subprocess
import sys
import threading
import time

from psrt_bench_cleanup import Cleanup, log  # noqa: F401  (re-exported: pb.Cleanup, pb.log)

SUBNET = "10.77.0."
SUBNET2 = "10.78.0."  # emunet.sh --planes 2: the second network
SIM_COLUMNS = ["iter_ms", "compute_ms", "link_ms", "critical_ms", "bound_ms"]


def source_dir(here, configured):
    """The source tree: CMake's @PROJECT_SOURCE_DIR@ when filled in, else two folders up from a
    driver run in place (bench/NAME/driver)."""
    if not configured.startswith("@"):
        return configured
    return os.path.normpath(os.path.join(here, "..", ".."))


# ---------------------------------------------------------------- units
def parse_size(text):
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(|k|kb|kib|m|mb|mib)\s*", str(text).lower())
    if not m:
        raise argparse.ArgumentTypeError("'%s' is not a size (4096, 64KiB, 1MiB)" % text)
    mult = {"": 1, "k": 1024, "kb": 1000, "kib": 1024, "m": 1 << 20, "mb": 1000000,
            "mib": 1 << 20}[m.group(2)]
    return int(float(m.group(1)) * mult)


def parse_rate(text):
    """Bits per second of a tc rate. Zero is refused: emunet.sh's tbf cannot shape it (the links
    were left unshaped) and the drivers divide by it."""
    m = re.fullmatch(r"(\d+)(bit|kbit|mbit|gbit)", str(text).lower())
    if not m:
        raise argparse.ArgumentTypeError("'%s' is not a tc rate (e.g. 500mbit, 1gbit)" % text)
    if int(m.group(1)) == 0:
        raise argparse.ArgumentTypeError("'%s': a rate must be above zero (e.g. 500mbit, 1gbit)"
                                         % text)
    return int(m.group(1)) * {"bit": 1, "kbit": 10**3, "mbit": 10**6, "gbit": 10**9}[m.group(2)]


def fmt_size(b):
    if b % (1 << 20) == 0:
        return "%dMiB" % (b >> 20)
    if b % 1024 == 0:
        return "%dKiB" % (b >> 10)
    return "%dB" % b


# ---------------------------------------------------------------- network
class Net:
    """HOSTS hosts in network namespaces behind tbf-shaped links (emunet.sh), or loopback."""

    def __init__(self, emunet, hosts, rate, prefix, cleanup, planes=1):
        # planes 2: pipeline stages talk over a network of their own
        self.emunet, self.hosts, self.rate, self.prefix, self.planes = (emunet, hosts, rate,
                                                                        prefix, planes)
        self.cleanup, self.netns = cleanup, False
        self.goodput = None  # bytes/s measured host 0 -> host 1

    def up(self):
        c = self.cleanup
        c.emunet, c.prefix = self.emunet, self.prefix
        c.netns = True  # down is harmless if nothing was made
        r = subprocess.run([self.emunet, "up", "--hosts", str(self.hosts), "--rate", self.rate,
                            "--prefix", self.prefix, "--planes", str(self.planes)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            raise RuntimeError("emunet up failed: " + (r.stderr or r.stdout).strip())
        if "falling back to loopback" in r.stderr:
            sys.stderr.write(r.stderr)
            log(c.prog, "WARNING: no network namespaces here: loopback, NOTHING IS SHAPED; the "
                "figures are functional checks, not bandwidth measurements")
            self.netns = False
            c.netns = False
        else:
            self.netns = True

    def addr(self, i):
        return SUBNET + str(i + 1) if self.netns else "127.0.0.1"

    def stage_addr(self, i):
        """Where host i's pipeline stage listens: the second plane's address when there is one."""
        return SUBNET2 + str(i + 1) if self.netns and self.planes == 2 else self.addr(i)

    def command(self, i, argv):
        if not self.netns:
            return argv
        return [self.emunet, "exec", "--prefix", self.prefix, str(i), "--"] + argv

    def measure(self, nbytes):
        if not self.netns:
            return None
        r = subprocess.run([self.emunet, "measure", "--prefix", self.prefix, "--bytes",
                            str(nbytes), "0", "1"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=120)
        m = re.search(r"([\d.]+) Mbit/s", r.stdout)
        if r.returncode != 0 or not m:
            raise RuntimeError("emunet measure failed: " + r.stdout.strip())
        self.goodput = float(m.group(1)) * 1e6 / 8
        return r.stdout.strip()


# ---------------------------------------------------------------- profiles
def read_profile(path):
    text = open(path).read()
    fwd = [float(x) for x in re.findall(r"^\s*forward_ms:\s*(\S+)", text, re.M)]
    bwd = [float(x) for x in re.findall(r"^\s*backward_ms:\s*(\S+)", text, re.M)]
    elems = [int(x) for x in re.findall(r"\{name:\s*[^,]+,\s*elements:\s*(\d+)\}", text)]
    gflops = re.search(r"^device_gflops:\s*(\S+)", text, re.M)
    return {"text": text, "compute_ms": sum(fwd) + sum(bwd), "bytes": 4 * sum(elems),
            "gflops": float(gflops.group(1)) if gflops else None}


def check_rate_and_models(rate, profiles, models):
    """What is wrong with a driver's --rate or --models (names of profiles in the folder
    `profiles`), or None: for the drivers to say before they set anything up."""
    try:
        parse_rate(rate)
    except argparse.ArgumentTypeError as e:
        return "--rate: %s" % e
    if not models:
        return "--models: no model given"
    for m in models:
        path = os.path.join(profiles, m + ".yaml")
        try:
            p = read_profile(path)
        except (OSError, UnicodeDecodeError, ValueError):
            try:
                known = sorted(f[:-5] for f in os.listdir(profiles) if f.endswith(".yaml"))
            except OSError:  # a folder that cannot be listed: the line still says what is wrong
                known = []
            return "--models: '%s' has no readable profile %s (there are: %s)" % (
                m, path, ", ".join(known) or "none")
        if not (p["bytes"] > 0 and p["compute_ms"] > 0):
            return "--models: %s: the profile has no gradients or no compute time" % path
    return None


def derive_profile(src, dst, k, scale, note, prog):
    """Writes src with every forward/backward time times k and `scale: scale`."""
    p = read_profile(src)
    text = p["text"]

    def times(m):
        return "%s%s" % (m.group(1), repr(float("%.9g" % (float(m.group(2)) * k))))

    text = re.sub(r"^(\s*(?:forward|backward)_ms:\s*)(\S+)", times, text, flags=re.M)
    text = re.sub(r"^scale:.*$", "scale: %s" % repr(float("%.9g" % scale)), text, flags=re.M)
    if p["gflops"]:
        text = re.sub(r"^device_gflops:.*$", "device_gflops: %s" %
                      repr(float("%.9g" % (p["gflops"] / k))), text, flags=re.M)
    with open(dst, "w") as f:
        f.write("# Derived by %s from %s: %s\n" % (prog, src, note) + text)


# ---------------------------------------------------------------- children
def psrt_lines(line):
    return "PSRT_" in line


class Reader(threading.Thread):
    """Copies a child's stdout to a log file and keeps the lines that matter (keep(line)), each
    with the monotonic time it arrived."""

    def __init__(self, pipe, path, keep=psrt_lines):
        super().__init__(daemon=True)
        self.pipe = pipe
        self.path = path
        self.keep = keep
        self.lines = []
        self.stamps = []
        self.event = threading.Event()

    def run(self):
        with open(self.path, "w") as f:
            for line in self.pipe:
                f.write(line)
                f.flush()
                if self.keep(line):
                    self.stamps.append(time.monotonic())
                    self.lines.append(line.rstrip("\n"))
                    self.event.set()
        self.event.set()

    def find(self, pattern):
        """The first kept line's match of the regular expression, or None."""
        for line in self.lines:
            m = re.search(pattern, line)
            if m:
                return m
        return None


def tail(path, n=5):
    try:
        with open(path) as f:
            return "".join(f.readlines()[-n:]).strip()
    except OSError:
        return ""


def spawn(net, host, argv, logdir, name, cleanup, keep=psrt_lines):
    """Starts argv on host in its own session; stderr to NAME.err, stdout through a Reader to
    NAME.out that keeps the lines keep() accepts."""
    err = open(os.path.join(logdir, name + ".err"), "w")
    with cleanup.hold():
        p = subprocess.Popen(net.command(host, argv), stdout=subprocess.PIPE, stderr=err,
                             stdin=subprocess.DEVNULL, text=True, start_new_session=True)
        cleanup.children.append(p)
    err.close()
    r = Reader(p.stdout, os.path.join(logdir, name + ".out"), keep)
    r.start()
    return p, r


def replay_job_yaml(job_id, iterations, servers, workers, coordinator, profile, mode, chunk,
                    credit, scheduler_extra=(), tail=""):
    """A bench job's YAML: the replay backend on `profile`, SGD, `mode` with chunk and credit;
    `scheduler_extra` more (key, value) lines under scheduler:, then `tail` (further sections)."""
    extra = "".join("  %s: %s\n" % kv for kv in scheduler_extra)
    return """job:
  id: %s
  iterations: %d
  batch_size: 32
  evaluate: false
  log_every: 0
cluster:
  servers: %d
  workers: %d
  coordinator: tcp://%s:0
  start_timeout_s: 30
model:
  backend: replay
  profile: %s
optimizer:
  type: sgd
  lr: 0.01
scheduler:
  mode: %s
  chunk_bytes: %d
  credit_bytes: %d
%s%s""" % (job_id, iterations, servers, workers, coordinator, profile, mode, chunk, credit, extra,
           tail)


def worker0_ms(readers, tag):
    """Worker 0's steady-state ms per iteration from its PSRT_RESULT line."""
    m = readers[0].find(r"PSRT_RESULT .*ms_per_iteration=([\d.]+)")
    if not m:
        raise RuntimeError("%s: worker 0 printed no PSRT_RESULT" % tag)
    return float(m.group(1))


def run_daemons(net, bindir, cfg, logdir, servers, workers, timeout_s, tag, cleanup,
                keep=psrt_lines):
    """Runs one job from cfg: servers on hosts 0..S-1 (server 0 the coordinator), workers on
    hosts S..S+W-1, each in its namespace. Waits for all to end (at most timeout_s); a daemon
    that fails raises RuntimeError with the tail of its log. Returns the workers' Readers, worker
    0's joined; the workers' Readers keep the lines keep() accepts. The caller ends the
    children (cleanup.kill_children) in a finally."""
    server = os.path.join(bindir, "psrt-server")
    worker = os.path.join(bindir, "psrt-worker")
    procs = []
    p0, r0 = spawn(net, 0, [server, "--config", cfg, "--rank", "0"], logdir, "server0", cleanup)
    procs.append(("server0", p0))
    if not r0.event.wait(30) or not r0.find("PSRT_LISTENING"):
        raise RuntimeError("%s: server 0 did not print PSRT_LISTENING: %s" %
                           (tag, tail(os.path.join(logdir, "server0.err"))))
    endpoint = r0.find(r"PSRT_LISTENING\s+(\S+)").group(1)
    coord = ["--set", "cluster.coordinator=" + endpoint]
    for s in range(1, servers):
        p, _ = spawn(net, s, [server, "--config", cfg, "--rank", str(s), "--set",
                              "cluster.bind_host=" + net.addr(s)] + coord, logdir,
                     "server%d" % s, cleanup)
        procs.append(("server%d" % s, p))
    readers = []
    for w in range(workers):
        # a pipeline stage binds the port its previous stage connects to: on its own address
        bind = ["--set", "cluster.bind_host=" + net.stage_addr(servers + w)] if net.netns else []
        p, r = spawn(net, servers + w, [worker, "--config", cfg, "--rank", str(w)] + coord + bind,
                     logdir, "worker%d" % w, cleanup, keep)
        procs.append(("worker%d" % w, p))
        readers.append(r)
    deadline = time.monotonic() + timeout_s
    for name, p in procs:
        try:
            p.wait(timeout=max(deadline - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            raise RuntimeError("%s: %s still running after %.0f s" % (tag, name, timeout_s))
    bad = [(n, p.returncode) for n, p in procs if p.returncode != 0]
    if bad:
        n = bad[0][0]
        raise RuntimeError("%s: %s exited with %s: %s" % (
            tag, n, bad[0][1], tail(os.path.join(logdir, n + ".err"))))
    readers[0].join(5)
    return readers


# ---------------------------------------------------------------- timelines: bytes per iteration
PUSH_RE = re.compile(r'"cat":"push".*?"bytes":(\d+),"server":\d+,"iteration":(\d+)')


def output_missing(path, error):
    """The line for a run's output that cannot be read (a failed timeline write removes it)."""
    return "%s: %s: the run's outputs could not be written (disk full?)" % (path, error.strerror)


def pushed_bytes(timeline_dir, workers):
    """{worker: {iteration: payload bytes pushed}} from the workers' Chrome traces."""
    out = {}
    for w in range(workers):
        per = {}
        path = os.path.join(timeline_dir, "worker-%d.json" % w)
        try:  # a missing trace was a traceback blaming the file, not the full disk behind it
            with open(path) as f:
                for m in filter(None, map(PUSH_RE.search, f)):
                    per[int(m.group(2))] = per.get(int(m.group(2)), 0) + int(m.group(1))
        except OSError as e:
            raise RuntimeError(output_missing(path, e))
        out[w] = per
    return out


def bytes_per_iteration(per_worker, first, last=None):
    """Mean payload bytes per iteration per worker over iterations [first, last]."""
    total, n = 0, 0
    for per in per_worker.values():
        for it, b in per.items():
            if it >= first and (last is None or it <= last):
                total += b
        n += len([it for it in per if it >= first and (last is None or it <= last)])
    return total / n if n else float("nan")


# ---------------------------------------------------------------- simulator, plots
def simulate(bindir, profile, workers, servers, bandwidth, mode, chunk, credit, iterations,
             latency_ms, calibration=None, grouping=None, batch_bytes=None, host_cores=0,
             job_host_cores=0):
    """psrt-sim's row for mode: iter_ms, compute_ms, link_ms, critical_ms, bound_ms, binding,
    io_cores (the cores its I/O threads keep busy), and jittered_ms with a grouping;
    with `calibration` (a psrt-sim calibration file), `grouping` (scheduler.grouping),
    `batch_bytes` (scheduler.batch_bytes; None: the default) and `host_cores` (psrt-sim
    --host-cores: 0, every process on cores of its own; N, all sharing N cores) and
    `job_host_cores` (the job's scheduler.host_cores, what the workers' grouping search assumes)."""
    argv = [os.path.join(bindir, "psrt-sim"), "--profile", profile, "--workers", str(workers),
            "--servers", str(servers), "--bandwidth", "%dB/s" % int(bandwidth), "--mode", mode,
            "--chunk-bytes", str(chunk), "--credit-bytes", str(credit), "--iterations",
            str(iterations), "--latency-ms", repr(latency_ms), "--waits"]
    if calibration:
        argv += ["--calibration", calibration]
    if grouping:
        argv += ["--grouping", grouping, "--jittered"]
    if batch_bytes is not None:
        argv += ["--batch-bytes", str(batch_bytes)]
    if host_cores:
        argv += ["--host-cores", str(host_cores)]
    if job_host_cores:
        argv += ["--job-host-cores", str(job_host_cores)]
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise RuntimeError("psrt-sim failed (%s): %s" % (" ".join(argv), r.stderr.strip()))
    row = None
    for line in r.stdout.splitlines():
        f = line.split()
        if f and f[0] == mode:
            row = dict(zip(SIM_COLUMNS, (float(x) for x in f[1:6])), binding=f[6])
        elif row and "jittered_ms" not in row and f[:1] == ["jittered:"]:
            # The mean over the bandwidth jitter GradOptimizer's search prices groupings at.
            row["jittered_ms"] = float(f[1])
        elif row and "io_cores" not in row and f[:1] == ["io:"]:
            # The cores the simulated I/O threads' calibrated work keeps busy (--waits).
            row["io_cores"] = float(f[1])
    if row:
        return row
    raise RuntimeError("psrt-sim printed no row for %s:\n%s" % (mode, r.stdout))


def gnuplot_terminal(gnuplot, out, size="960,640"):
    """The terminal line for out (.svg, else PNG: pngcairo where gnuplot has it)."""
    if out.endswith(".svg"):
        return "svg size %s dynamic enhanced font 'sans,12'" % size
    terms = subprocess.run([gnuplot, "-e", "set terminal"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True).stdout
    if "pngcairo" in terms:
        return "pngcairo size %s enhanced font 'sans,11'" % size
    return "png size %s" % size
