#!/usr/bin/env bash
# The GPU check, for a machine with a CUDA device (no development machine so far has had one):
# builds with CUDA required, runs every [gpu] test (CPU vs GPU layers, networks and LACO encoder),
# the GPU row of psrt-bench-compress, and a short LeNet-5 job on the gpu
# backend with LACO compressing on the device. Prints everything; exits non-zero on the first
# failure. Usage: bash deploy/gpu-check.sh [build-dir]   (default build-gpu)
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:-build-gpu}"
nvidia-smi -L || { echo "gpu-check: no NVIDIA device visible" >&2; exit 1; }
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DPSRT_CUDA=ON >/dev/null
cmake --build "$dir" -j"$(nproc)"
echo "== [gpu] tests"
ctest --test-dir "$dir" -L gpu --output-on-failure
"$dir"/bin/test_compress_gpu --success --reporter compact | tail -3
"$dir"/bin/test_engine_gpu --success --reporter compact | tail -3
echo "== psrt-bench-compress (LACO; the GPU row is printed last)"
"$dir"/bin/psrt-bench-compress --codecs none,laco
echo "== LeNet-5 on the gpu backend, 2 workers, 1 epoch, LACO on the device"
"$dir"/bin/psrt-launch examples/lenet5.yaml --set model.backend=gpu --set cluster.workers=2 \
  --set job.epochs=1 --set compression.codec=laco
