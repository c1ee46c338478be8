#!/usr/bin/python3
"""PyTorch baseline for psrt-bench-engine: times SGD training steps of the same model at the same
batch size, on the CPU with one thread or (--device cuda) on the GPU, and prints one line,
`samples_per_s <value> step_ms <median ms>`. Exits 3 with `unavailable: <reason>` when torch cannot
be imported, or has no CUDA device for --device cuda."""
import argparse
import sys
import time


def build(torch, arch, classes, dropout):
    nn = torch.nn
    if arch == "lenet5":
        return nn.Sequential(
            nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
            nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
            nn.Linear(84, classes))
    if arch == "vgg-small":
        layers = [nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 32, 3, padding=1),
                  nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(),
                  nn.Conv2d(64, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                  nn.Linear(3136, 256), nn.ReLU()]
        if dropout > 0:
            layers.append(nn.Dropout(dropout))
        layers.append(nn.Linear(256, classes))
        return nn.Sequential(*layers)
    raise SystemExit(f"unknown model {arch}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--dropout", type=float, default=0.5)
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    args = ap.parse_args()
    try:
        import torch
    except Exception as e:  # noqa: BLE001 - any import failure means "no baseline"
        print(f"unavailable: {type(e).__name__}: {e}")
        return 3
    if args.device == "cuda" and not torch.cuda.is_available():
        print("unavailable: torch has no CUDA device")
        return 3
    torch.set_num_threads(1)
    torch.manual_seed(1)
    dev = torch.device(args.device)
    model = build(torch, args.model, 10, args.dropout).to(dev)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.rand(args.batch, 1, 28, 28)  # on the host: each step uploads its batch, as psrt's
    y = torch.randint(0, 10, (args.batch,))
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=False)
        loss = loss_fn(model(x.to(dev)), y.to(dev))
        loss.backward()
        opt.step()
        if args.device == "cuda":
            torch.cuda.synchronize()

    for _ in range(args.warmup):
        step()
    times = []
    for _ in range(args.steps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    times.sort()
    median = times[len(times) // 2]
    print(f"samples_per_s {args.batch / median:.3f} step_ms {median * 1e3:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
