"""psrt-bench-convergence --e2e: the VGG-16 profile replayed on an emulated network, none
against LACO (with dense and with compressed replies). Standard library only."""

import os
import time

import psrt_bench as pb
from psrt_conv_runs import CLEANUP, PROG, log, steady_from
from psrt_bench import bytes_per_iteration, parse_rate, pushed_bytes

# ---------------------------------------------------------------- end to end (emulated network)
def run_replay(args, net, workdir, profile, codec, tag):
    """One replay job in the namespaces; returns (worker 0's steady ms per iteration, payload
    bytes pushed per iteration per worker after LACO's start, test run's wall seconds)."""
    logdir = os.path.join(workdir, tag)
    os.makedirs(logdir, exist_ok=True)
    cfg = os.path.join(logdir, "job.yaml")
    timeline = os.path.join(logdir, "timeline")
    # "laco+replies": LACO pushes and compressed parameter replies (compression.replies)
    replies = "compressed" if codec.endswith("+replies") else "dense"
    codec = codec.split("+")[0]
    tail = """compression:
  codec: %s
  density: %s
  calibration_iters: %d
  warmup_iters: %d
  replies: %s
timeline: %s
log_level: warn
""" % (codec, repr(args.density), args.calibration_iters, args.warmup_iters, replies, timeline)
    with open(cfg, "w") as f:
        f.write(pb.replay_job_yaml("bench-e2e", args.iterations, args.servers, args.workers,
                                   net.addr(0), profile, args.mode, args.chunk_bytes,
                                   args.credit_bytes, (), tail))
    t0 = time.monotonic()
    try:
        readers = pb.run_daemons(net, args.bin_dir, cfg, logdir, args.servers, args.workers,
                                 args.run_timeout_s, tag, CLEANUP)
        ms = pb.worker0_ms(readers, tag)
        got = readers[0].find(r"PSRT_RESULT .*received_bytes=(\d+)")
        received = int(got.group(1)) / float(args.iterations) if got else float("nan")
        wall = time.monotonic() - t0
        b = bytes_per_iteration(pushed_bytes(timeline, args.workers), steady_from(args))
        return ms, b, wall, received
    finally:
        CLEANUP.kill_children()


def e2e(args, workdir):
    hosts = args.workers + args.servers
    net = pb.Net(args.emunet, hosts, args.rate, args.prefix, CLEANUP)
    net.up()
    nominal = parse_rate(args.rate) / 8.0
    if net.netns:
        out = net.measure(args.measure_bytes or max(int(nominal * 0.4), 1000000))
        bandwidth = net.goodput
        print("network: %d hosts in namespaces %s-h0..h%d, tbf %s per host link each way; "
              "measured TCP goodput %s (%.1f%% of the rate)" % (
                  hosts, args.prefix, hosts - 1, args.rate, out.split(": ", 1)[1],
                  100 * bandwidth / nominal))
    else:
        bandwidth = nominal
        print("network: LOOPBACK (no namespaces: not root?), nothing shaped; the speedup means "
              "nothing here")
    src = os.path.join(args.profiles, args.model + ".yaml")
    p = pb.read_profile(src)
    # Compute times x k make the emulated rate look like --as-rate to the profile's device:
    # time on the wire grows by as_rate / rate, so compute grows by the same factor.
    k = parse_rate(args.as_rate) / float(parse_rate(args.rate))
    busiest = max(1.0, float(args.workers) / args.servers)
    # scale: the busiest link carries --link-ms of dense gradients per iteration each way.
    scale = args.link_ms / 1e3 * bandwidth / (p["bytes"] * busiest)
    compute_ms = p["compute_ms"] * k * scale
    note = ("times x %.4g (the %s rate emulates %s for the profile's %s GFLOPS device), scale "
            "%.4g: %.2f MB of gradients, compute %.1f ms per iteration" % (
                k, args.rate, args.as_rate, p["gflops"], scale, p["bytes"] * scale / 1e6,
                compute_ms))
    prof = os.path.join(workdir, "%s-e2e.yaml" % args.model)
    pb.derive_profile(src, prof, k, scale, note, PROG)
    link_ms = p["bytes"] * scale * busiest / bandwidth * 1e3
    print("cluster: %d workers, %d servers (hosts 0..%d are the servers), mode %s, chunk %d B, "
          "credit %d B; %d iterations per run (ms/iter is worker 0's steady state, first tenth "
          "excluded), best of %d; LACO density %g, calibration %d + warm-up %d iterations" % (
              args.workers, args.servers, args.servers - 1, args.mode, args.chunk_bytes,
              args.credit_bytes, args.iterations, args.repeat, args.density,
              args.calibration_iters, args.warmup_iters))
    print("model: %s: %s" % (args.model, note))
    print("the busiest link (a server's) carries %.1f ms of dense data per iteration each way at "
          "the measured goodput: pushes in, parameter replies out (dense, except for "
          "laco+replies: compression.replies compressed); compute/link %.3f" % (
              link_ms, compute_ms / link_ms))
    rows = []
    for codec in args.e2e_codecs:
        runs = [run_replay(args, net, workdir, prof, codec, "%s-%d" % (codec, i))
                for i in range(args.repeat)]
        best = min(runs)
        log("%s: runs %s ms per iteration, best taken" % (
            codec, ", ".join("%.1f" % r[0] for r in runs)))
        rows.append((codec, best[0], best[1], best[3]))
    print_rows(args, rows, compute_ms, link_ms)
    if not net.netns:
        print("\nWARNING: loopback run, nothing was shaped: functional check only")
    return rows


def print_rows(args, rows, compute_ms, link_ms):
    """The table of codecs against none, and the bounds that limit the speedup."""
    base = rows[0]
    print("\n%-12s | %12s | %17s | %9s | %17s | %9s | %9s" % (
        "codec", "ms/iteration", "pushed B/iter/wkr", "ratio", "replies B/iter/wkr", "ratio",
        "speedup"))
    for codec, ms, b, rec in rows:
        print("%-12s | %12.1f | %17.0f | %8.1fx | %17.0f | %8.1fx | %8.2fx" % (
            codec, ms, b, base[2] / b, rec, base[3] / rec, base[1] / ms))
    print("pushed: payload bytes after LACO's calibration and warm-up (worker timelines); "
          "replies: parameter payload bytes worker 0 received over the whole run (its first "
          "values and the dense calibration included) / iterations")
    print("gradients in replay are fixed synthetic values (worker/replay_backend.cc), so LACO's "
          "payload sizes are what those values give, not a real model's; fine for timing")
    if not args.smoke and len(rows) > 1 and rows[0][0] == "none":
        for codec, ms, b, _ in rows[1:]:
            print("\n%s vs none end to end: %.2fx (%.1f -> %.1f ms per iteration); the LACO "
                  "authors' best is 2.54x" % (codec, base[1] / ms, base[1], ms))
            if codec.endswith("+replies"):
                continue
            print("lower bounds: none max(compute %.1f, link %.1f) = %.1f ms; %s: the dense "
                  "parameter replies alone keep %.1f ms on the busiest link, so with dense replies "
                  "no push codec can beat none's measured / %.1f = %.2fx here; pushes only "
                  "(replies compressed like the pushes) would allow up to %.1f / max(compute, "
                  "%.1f) = %.1fx" % (
                      compute_ms, link_ms, max(compute_ms, link_ms), codec, link_ms, link_ms,
                      base[1] / max(link_ms, compute_ms), base[1], link_ms * b / base[2],
                      base[1] / max(compute_ms, link_ms * b / base[2])))
