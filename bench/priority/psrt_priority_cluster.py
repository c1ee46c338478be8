"""psrt_priority_cluster: one job of psrt-bench-priority on the emulated cluster (its YAML, its
daemons, worker 0's steady-state time) and the cores it kept busy. Standard library only; copied
next to the driver by CMake.
"""

import os
import resource
import time

import psrt_bench as pb
import psrt_grouping_bench as gb




def cpu_times():
    """(busy, total) jiffies of the whole machine, from /proc/stat."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + (v[4] if len(v) > 4 else 0)
    return sum(v) - idle, sum(v)


class CpuMeter:
    """Cores in use during a run: by the cluster's daemons (their rusage) and by the machine."""

    def __init__(self):
        self.t0 = time.monotonic()
        self.m0 = cpu_times()
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.c0 = r.ru_utime + r.ru_stime

    def stop(self):
        wall = time.monotonic() - self.t0
        m1 = cpu_times()
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        ncpu = os.cpu_count() or 1
        machine = (m1[0] - self.m0[0]) / max(1, m1[1] - self.m0[1]) * ncpu
        own = (r.ru_utime + r.ru_stime - self.c0) / max(wall, 1e-9)
        return own, machine


def run_cluster(args, net, bindir, workdir, profile, mode, chunk, credit, cleanup, tag,
                grouping="none", bandwidth=0.0):
    """Runs one job (its children ended by `cleanup` afterwards); returns (steady-state ms per
    iteration measured by worker 0, daemons' cores, machine's busy cores)."""
    logdir = os.path.join(workdir, tag)
    os.makedirs(logdir, exist_ok=True)
    cfg = os.path.join(logdir, "job.yaml")
    extra = [("grouping", "'%s'" % grouping), ("calibration", "'%s'" % (args.calibration or "")),
             ("link_bytes_per_s", "%.1f" % max(bandwidth, 1e3)),
             ("host_cores", args.job_host_cores), ("grouping_trials", args.grouping_trials)]
    if args.batch_bytes is not None:
        extra.append(("batch_bytes", args.batch_bytes))
    tail = "log_level: %s\n" % ("info" if grouping != "none" else "warn")
    if args.timelines:
        tail += "timeline: %s\n" % os.path.join(logdir, "timeline")
    with open(cfg, "w") as f:
        f.write(pb.replay_job_yaml("bench-priority",
                                   gb.job_iterations(grouping, args.grouping_trials,
                                                     args.iterations),
                                   args.servers, args.workers, net.addr(0), profile, mode, chunk,
                                   credit, extra, tail))
    meter = CpuMeter()
    try:
        readers = pb.run_daemons(net, bindir, cfg, logdir, args.servers, args.workers,
                                 args.run_timeout_s, tag, cleanup)
        ms = pb.worker0_ms(readers, tag)
        own, machine = meter.stop()
        return ms, own, machine
    finally:
        cleanup.kill_children()
