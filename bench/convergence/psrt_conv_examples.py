"""psrt-bench-convergence --examples: the shipped examples as the measure (issue 18 item 2). Each
example file runs as it is (dense) and with compression switched on by --example-set (default one
--set: compression.codec=laco), for --seeds seeds; the table gives both side by side with every
seed's final accuracy and the seed spread, the push ratio and the reply ratio, and the target
lines print MET / MISSED. Each run's figures are saved (result.json in its folder), so that
--reuse can report runs made by an earlier invocation without training them again.
Standard library only."""

import argparse
import json
import os
import re
import shutil

from psrt_bench import bytes_per_iteration
from psrt_conv_curves import compare, plot_example
from psrt_conv_runs import launch, log

TRAIN_IMAGES = 60000


def example_facts(path):
    """workers, batch_size, epochs, the example's optimizer type, read from the example's YAML
    (the few plain `key: value` lines the examples use; no YAML module needed)."""
    text = open(path).read()

    def num(key, default):
        m = re.search(r"^\s+%s:\s*([\d.]+)" % key, text, re.M)
        return float(m.group(1)) if m else default
    m = re.search(r"^optimizer:\s*\n(?:\s+.*\n)*?\s+type:\s*(\w+)", text, re.M)
    return {"workers": int(num("workers", 1)), "batch": int(num("batch_size", 64)),
            "epochs": num("epochs", 1), "optimizer": m.group(1) if m else "sgd"}


def sent_before(per_worker, iteration):
    """Payload bytes one worker pushed before `iteration` (mean over the workers)."""
    sums = [sum(b for it, b in per.items() if it < iteration) for per in per_worker.values()]
    return sum(sums) / len(sums) if sums else 0


def one_run(args, path, facts, sets, tag, workdir):
    """launch() of the example with `sets`, or the saved figures with --reuse."""
    saved = os.path.join(workdir, tag, "result.json")
    if args.reuse and os.path.exists(saved):
        with open(saved) as f:
            return json.load(f)
    a = argparse.Namespace(**vars(args))
    a.workers = facts["workers"]
    r = launch(a, path, sets, tag, workdir, args.run_timeout_s)
    evals = r["evals"] + ([(r["iterations"], r["accuracy"])] if r["accuracy"] is not None else [])
    m = {"accuracy": r["accuracy"], "evals": evals, "iterations": r["iterations"],
         "seconds": r["seconds"], "steady": bytes_per_iteration(r["bytes"], args.steady_from),
         "whole": bytes_per_iteration(r["bytes"], 0), "received": r.get("received_bytes"),
         "sent_before": [sent_before(r["bytes"], it) for it, _ in evals]}
    with open(saved, "w") as f:
        json.dump(m, f)
    shutil.rmtree(r["timeline"], ignore_errors=True)  # large; the figures are in result.json
    return m


def run_example(args, name, workdir):
    path = os.path.join(args.examples_dir, name + ".yaml")
    facts = example_facts(path)
    per_epoch = TRAIN_IMAGES // (facts["workers"] * facts["batch"])
    base = ["job.eval_every=%d" % max(1, per_epoch // 2), "job.log_every=0"] + args.set
    variants = [("dense", []), (args.variant, args.example_set)]
    out = {"facts": facts}
    for kind, extra in variants:
        out[kind] = []
        for k in range(args.seeds):
            seed = args.seed + k
            tag = "%s-%s-seed%d" % (name, kind, seed)
            r = one_run(args, path, facts, base + extra + ["job.seed=%d" % seed], tag, workdir)
            log("%s %s seed %d: accuracy %.4f, %.0f B pushed per iteration per worker "
                "(steady), %.0f s" % (name, kind, seed, r["accuracy"], r["steady"],
                                      r["seconds"]))
            out[kind].append(r)
    return out


def mean(xs):
    return sum(xs) / len(xs)


def report(args, name, res):
    """The example's two rows and its target lines; returns the MET / MISSED lines."""
    d, c = res["dense"], res[args.variant]
    acc_d, acc_c = [r["accuracy"] for r in d], [r["accuracy"] for r in c]
    ratio = mean([r["steady"] for r in d]) / mean([r["steady"] for r in c])
    whole = mean([r["whole"] for r in d]) / mean([r["whole"] for r in c])
    rec_d = [r["received"] for r in d if r.get("received")]
    rec_c = [r["received"] for r in c if r.get("received")]
    print("\n== examples/%s.yaml (%d workers, optimizer %s): as shipped vs --set %s" % (
        name, res["facts"]["workers"], res["facts"]["optimizer"], " --set ".join(args.example_set)))
    print("%-10s | %13s | %13s | %7s | %s | %8s | %7s" % (
        "run", "B/iter/worker", "B/iter/worker", "ratio", " | ".join(
            "seed %-3d" % (args.seed + k) for k in range(args.seeds)), "mean", "spread"))
    print("%-10s | %13s | %13s | %7s | %s | %8s | %7s" % (
        "", "steady", "whole run", "", " | ".join(" " * 8 for _ in range(args.seeds)),
        "final", "max-min"))
    for kind, rs, accs, rt in (("dense", d, acc_d, 1.0), (args.variant, c, acc_c, ratio)):
        print("%-10s | %13.0f | %13.0f | %6.1fx | %s | %8.4f | %7.4f" % (
            kind, mean([r["steady"] for r in rs]), mean([r["whole"] for r in rs]), rt,
            " | ".join("%8.4f" % a for a in accs), mean(accs), max(accs) - min(accs)))
    if rec_d and rec_c:
        print("replies (worker 0's parameter bytes received): dense %.0f, LACO run %.0f: %.1fx" % (
            mean(rec_d), mean(rec_c), mean(rec_d) / mean(rec_c)))
    gap = 100 * (mean(acc_c) - mean(acc_d))
    v = args.variant
    lines = ["%-6s %s: %s within 0.5 points of dense: %+.2f points (mean of %d seeds %.4f vs "
             "%.4f; seed spread %s %.4f, dense %.4f)" % (
                 "MET" if gap >= -0.5 else "MISSED", name, v, gap, args.seeds, mean(acc_c),
                 mean(acc_d), v, max(acc_c) - min(acc_c), max(acc_d) - min(acc_d)),
             "%-6s %s: %s push ratio at least 100x: %.1fx steady (iterations >= %d); %.1fx over "
             "the whole run" % ("MET" if ratio >= 100 else "MISSED", name, v, ratio,
                                args.steady_from, whole)]
    if rec_d and rec_c:
        rr = mean(rec_d) / mean(rec_c)
        lines.append("%-6s %s: compressed replies on: %.1fx fewer parameter bytes received" % (
            "MET" if rr > 1.5 else "MISSED", name, rr))
    if name.startswith("lenet5"):
        lines.append("%-6s %s: %s at least 0.90 test accuracy: %.4f (mean of %d seeds)" % (
            "MET" if mean(acc_c) >= 0.90 else "MISSED", name, v, mean(acc_c), args.seeds))
    return lines


def examples(args, workdir):
    lines = []
    results = {}
    for name in args.examples:
        results[name] = run_example(args, name, workdir)
    for name in args.examples:
        lines += report(args, name, results[name])
    for name in args.examples:
        lines += compare(workdir, name)
    for name in args.examples:
        for path in plot_example(workdir, name, os.path.join(args.plot_dir or workdir, name)):
            print("plot: " + path)
    print("\n== targets (issue 18 items 1-3)")
    for line in lines:
        print(line)
    return results
