#!/usr/bin/env bash
# The GPU check, step 2 of 2, on the GPU machine (step 1, deploy/gpu-check.sh, packed .gpu/ on
# the development machine). From the repository root:
#   source .gpu/env.sh && bash deploy/gpu-run.sh
# Prints, in about 8 minutes: the [gpu] tests' results, compute-sanitizer memcheck (and racecheck
# of the LACO kernels) where the sanitizer is present, psrt-bench-compress's GPU rows,
# psrt-bench-engine's GPU column beside PyTorch on CUDA, and LeNet-5 jobs on the gpu backend (one
# worker; two with LACO on the device; four sharing the GPU, with CUDA MPS too where it exists).
# Goes on after a failure; exits non-zero if anything failed.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
[[ -n ${G:-} && -d /tmp/g/bin ]] || { echo "gpu-run: source .gpu/env.sh first" >&2; exit 2; }
failed=()
step() { echo; echo "== $*"; }
run() {  # run NAME TIMEOUT_S COMMAND...: prints the output, records a failure
  local name=$1 limit=$2
  shift 2
  timeout "$limit" "$@"
  local rc=$?
  ((rc == 124)) && echo "gpu-run: $name timed out after ${limit}s"
  ((rc != 0)) && failed+=("$name (exit $rc)")
  return 0
}
sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
python=$(command -v python3 || echo /usr/bin/python3)
data=(--set "data.path=$G/data")

step "[gpu] tests"
run test_compress_gpu 180 test_compress_gpu --reporter compact
run test_engine_gpu 180 test_engine_gpu --reporter compact
run test_worker_backend 60 test_worker_backend "[gpu]" --reporter compact

if [[ -n $sanitizer ]]; then
  step "compute-sanitizer memcheck (and racecheck of the LACO kernels)"
  run memcheck_compress 150 "$sanitizer" --tool memcheck --print-limit 20 test_compress_gpu \
    --reporter compact
  run memcheck_engine 120 "$sanitizer" --tool memcheck --print-limit 20 test_engine_gpu \
    --reporter compact
  run racecheck_lads 60 "$sanitizer" --tool racecheck --print-limit 20 test_compress_gpu \
    "CUDA LADS encodes a batch*" --reporter compact
else
  step "compute-sanitizer: not found, memcheck not run"
fi

step "psrt-bench-compress: LACO's GPU rows (CPU rows first, for reference)"
run bench_compress 150 psrt-bench-compress --codecs none,laco --reps 10

step "psrt-bench-engine: CPU table, then the GPU column beside PyTorch on CUDA"
run bench_engine 150 psrt-bench-engine --python "$python" \
  --torch-script bench/engine/torch_bench.py

# Jobs: 300 iterations of batch 64, no evaluation; the log's samples/s gives the iteration time.
job=(examples/lenet5.yaml --set model.backend=gpu --set job.iterations=300 --set job.evaluate=false
     --set cluster.servers=1 "${data[@]}")
step "LeNet-5, gpu backend, 1 server, 1 worker, no compression"
run job_1w 90 psrt-launch "${job[@]}" --set cluster.workers=1
step "LeNet-5, gpu backend, 2 workers, LACO on the device"
run job_laco 90 psrt-launch "${job[@]}" --set cluster.workers=2 --set compression.codec=laco
step "LeNet-5, gpu backend, 4 workers sharing the GPU (time-sliced)"
run job_4w 120 psrt-launch "${job[@]}" --set cluster.workers=4
if command -v nvidia-cuda-mps-control >/dev/null; then
  step "LeNet-5, gpu backend, 4 workers sharing the GPU under CUDA MPS"
  export CUDA_MPS_PIPE_DIRECTORY=/tmp/psrt-mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/psrt-mps-log
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  if nvidia-cuda-mps-control -d; then
    run job_4w_mps 120 psrt-launch "${job[@]}" --set cluster.workers=4
    echo quit | nvidia-cuda-mps-control
  else
    echo "gpu-run: nvidia-cuda-mps-control -d failed: MPS not measured"
  fi
else
  step "CUDA MPS: nvidia-cuda-mps-control not found, not measured"
fi

echo
if ((${#failed[@]})); then
  echo "gpu-run: FAILED: ${failed[*]}"
  exit 1
fi
echo "gpu-run: everything passed"
