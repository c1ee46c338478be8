#!/usr/bin/env bash
# The GPU check, step 1 of 2, on THIS (Debian, development) machine: builds with CUDA required
# and packs the programs the check needs, their shared libraries and Fashion-MNIST into .gpu/
# (ignored by git) with ../shared/tools/gpu-pack. The GPU machine has the NVIDIA driver and CUDA
# 13 but none of our Debian libraries and no package registry, so nothing is built there.
#
# Step 2, on the GPU machine, from the repository root (with .gpu/ carried along):
#   source .gpu/env.sh && bash deploy/gpu-run.sh
# which prints the [gpu] tests' results (and compute-sanitizer memcheck where present), the GPU
# rows of psrt-bench-compress, the GPU column of psrt-bench-engine and short LeNet-5 jobs on the
# gpu backend, in about 8 minutes.
#
# Usage: bash deploy/gpu-check.sh [build-dir]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/.." || exit 2
dir="${1:-build}"
pack="${PSRT_GPU_PACK:-../shared/tools/gpu-pack}"
[[ -x $pack ]] || { echo "gpu-check: $pack not found (set PSRT_GPU_PACK)" >&2; exit 2; }
[[ -x /usr/local/cuda/bin/nvcc ]] || { echo "gpu-check: no nvcc at /usr/local/cuda" >&2; exit 2; }
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache
                                          -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DPSRT_CUDA=ON "${launcher[@]}" >/dev/null
# What gpu-run.sh runs: the daemons and the launcher, the benchmarks, the [gpu] test programs.
programs=(psrt-server psrt-worker psrt-launch psrt-bench-compress psrt-bench-engine
          test_compress_gpu test_engine_gpu test_worker_backend)
cmake --build "$dir" -j"$(nproc)" --target "${programs[@]}"
"$pack" --build "$dir" --data "${programs[@]}"
# The pack must hold every program and a data set; say what is in it.
listing=$(tar -tJf .gpu/stage.tar.xz)
for p in "${programs[@]}"; do
  grep -qx "./bin/$p" <<<"$listing" || { echo "gpu-check: $p missing from .gpu/" >&2; exit 1; }
done
ls .gpu/data/*idx* >/dev/null 2>&1 || { echo "gpu-check: no data in .gpu/data" >&2; exit 1; }
echo "gpu-check: packed $(grep -c '^./bin/.' <<<"$listing") programs, $(grep -c '^\./lib[^/]*/.' <<<"$listing") libraries and $(ls .gpu/data | wc -l) data files"
echo "gpu-check: on the GPU machine, from the repository root: source .gpu/env.sh && bash deploy/gpu-run.sh"
