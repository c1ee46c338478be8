#!/usr/bin/python3
"""Compares the native engine with PyTorch on the same weights and inputs: every layer's forward
and gradients, and one whole LeNet-5 SGD step (loss, gradients, updated parameters).

    tests/torch_reference.py --dump PATH/TO/psrt-engine-dump

Runs the dump program into a temporary file, loads it, recomputes everything with torch (float32,
one thread) and prints PASS/FAIL per check; the relative error is ||a - b|| / max(||a||, ||b||)
and must be at most 1e-4. Exit 0 when all pass, 1 on a failure, 2 on a usage or dump error."""
import argparse
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F

TOL = 1e-4


def load(path):
    recs = {}
    with open(path, "rb") as f:
        data = f.read()
    off = 0
    while off < len(data):
        (n,) = struct.unpack_from("<I", data, off)
        off += 4
        name = data[off:off + n].decode()
        off += n
        (rank,) = struct.unpack_from("<I", data, off)
        off += 4
        dims = struct.unpack_from("<%dq" % rank, data, off)
        off += 8 * rank
        count = int(np.prod(dims)) if rank else 1
        arr = np.frombuffer(data, dtype="<f4", count=count, offset=off).reshape(dims)
        off += 4 * count
        recs[name] = torch.from_numpy(arr.copy())
    return recs


class Report:
    def __init__(self):
        self.failed = 0

    def check(self, what, ours, theirs):
        a = ours.double().flatten()
        b = theirs.detach().double().flatten()
        if a.shape != b.shape:
            print(f"FAIL {what}: shape {tuple(a.shape)} vs {tuple(b.shape)}")
            self.failed += 1
            return
        scale = max(a.norm().item(), b.norm().item())
        err = (a - b).norm().item() / scale if scale > 0 else (a - b).norm().item()
        ok = err <= TOL
        self.failed += 0 if ok else 1
        print(f"{'PASS' if ok else 'FAIL'} {what}: relative error {err:.2e}")


def run_layer(r, rec, tag, fn, params=()):
    x = rec[tag + ".x"].clone().requires_grad_(True)
    ps = [rec[f"{tag}.{p}"].clone().requires_grad_(True) for p in params]
    y = fn(x, *ps)
    y.backward(rec[tag + ".dy"].reshape(y.shape))
    r.check(f"{tag} forward", rec[tag + ".y"], y)
    r.check(f"{tag} input gradient", rec[tag + ".dx"], x.grad)
    for name, p in zip(params, ps):
        r.check(f"{tag} {name} gradient", rec[f"{tag}.d{name}"], p.grad)


def conv_fn(cfg):
    c, _, _, oc, k, s, pad = [int(v) for v in cfg.tolist()]
    return lambda x, w, b: F.conv2d(x, w.reshape(oc, c, k, k), b, stride=s, padding=pad)


def lenet5(rec, r):
    p = {k[len("lenet5.param."):]: v for k, v in rec.items() if k.startswith("lenet5.param.")}
    model = torch.nn.Sequential(
        torch.nn.Conv2d(1, 6, 5, padding=2), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(6, 16, 5), torch.nn.ReLU(), torch.nn.MaxPool2d(2), torch.nn.Flatten(),
        torch.nn.Linear(400, 120), torch.nn.ReLU(), torch.nn.Linear(120, 84), torch.nn.ReLU(),
        torch.nn.Linear(84, 10))
    names = {0: "conv1", 3: "conv2", 7: "fc1", 9: "fc2", 11: "fc3"}
    with torch.no_grad():
        for idx, name in names.items():
            m = model[idx]
            m.weight.copy_(p[name + ".weight"].reshape(m.weight.shape))
            m.bias.copy_(p[name + ".bias"])
    opt = torch.optim.SGD(model.parameters(), lr=float(rec["lenet5.lr"][0]))
    loss = F.cross_entropy(model(rec["lenet5.x"]), rec["lenet5.labels"].long())
    opt.zero_grad()
    loss.backward()
    r.check("lenet5 step loss", rec["lenet5.loss"], loss.reshape(1))
    grads = {}
    for idx, name in names.items():
        m = model[idx]
        grads[name + ".weight"], grads[name + ".bias"] = m.weight.grad.clone(), m.bias.grad.clone()
    opt.step()
    for idx, name in names.items():
        m = model[idx]
        for part, tensor in (("weight", m.weight), ("bias", m.bias)):
            key = f"{name}.{part}"
            r.check(f"lenet5 step gradient {key}", rec["lenet5.grad." + key], grads[key])
            r.check(f"lenet5 step updated {key}", rec["lenet5.after." + key], tensor)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dump", required=True, help="path of the psrt-engine-dump program")
    args = ap.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "layers.bin")
        done = subprocess.run([args.dump, path], check=False)
        if done.returncode != 0:
            print(f"psrt-engine-dump failed with exit code {done.returncode}")
            return 2
        rec = load(path)
    r = Report()
    run_layer(r, rec, "linear", lambda x, w, b: F.linear(x, w.reshape(5, 7), b), ("weight", "bias"))
    for tag in ("conv_pad", "conv_nopad", "conv_stride"):
        run_layer(r, rec, tag, conv_fn(rec[tag + ".cfg"]), ("weight", "bias"))
    run_layer(r, rec, "relu", F.relu)
    run_layer(r, rec, "maxpool", lambda x: F.max_pool2d(x, 2, 2))
    run_layer(r, rec, "flatten", lambda x: torch.flatten(x, 1))
    mask = rec["dropout.mask"]
    run_layer(r, rec, "dropout", lambda x: x * mask / 0.5)  # p = 0.5, the engine's mask

    z = rec["xent.x"].clone().requires_grad_(True)
    loss = F.cross_entropy(z, rec["xent.labels"].long())
    loss.backward()
    r.check("softmax_xent loss", rec["xent.loss"], loss.reshape(1))
    r.check("softmax_xent probabilities", rec["xent.y"], torch.softmax(z.detach(), 1))
    r.check("softmax_xent logit gradient", rec["xent.dx"], z.grad)

    lenet5(rec, r)
    print("torch_reference: " + ("all passed" if r.failed == 0 else f"{r.failed} FAILED"))
    return 0 if r.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
