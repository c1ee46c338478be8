#!/usr/bin/env bash
# A model-parallel job on emulated hosts with two networks (deploy/netem/emunet.sh --planes 2), as
# psrt-bench-pipeline runs it: servers and the coordinator on the first plane, each stage listening
# on its host's second-plane address. The job must end cleanly, the stage link must be on the
# second plane, and the parameters must be those of the same job on loopback, bit for bit.
# Usage: stage_planes_test.sh BIN_DIR SOURCE_DIR. Exit 77 (skipped) without root or namespaces.
set -uo pipefail
bin=$1
src=$2
source "$(dirname "$0")/netns_common.sh"
netns_setup sp

bash "$emunet" up --hosts 3 --rate 1gbit --planes 2 --prefix "$prefix" >/dev/null || fail "emunet up"
file="$src/examples/lenet5-model-parallel.yaml"
sets=(--set job.iterations=20 --set job.log_every=0 --set job.evaluate=false
      --set cluster.start_timeout_s=60 --set "job.dump_params=$work/p-{rank}.bin")
coord="tcp://10.77.0.1:29600"
on_host() {  # on_host I LOGNAME CMD...
  local i=$1 log=$2
  shift 2
  ip netns exec "$prefix-h$i" "$@" "${sets[@]}" --set "cluster.coordinator=$coord" \
    >"$work/$log.log" 2>&1 &
  pids+=($!)
}
on_host 0 server0 "$bin/psrt-server" --config "$file" --rank 0 --set cluster.servers=1
on_host 1 worker0 "$bin/psrt-worker" --config "$file" --rank 0 --set cluster.servers=1 \
  --set cluster.bind_host=10.78.0.2
on_host 2 worker1 "$bin/psrt-worker" --config "$file" --rank 1 --set cluster.servers=1 \
  --set cluster.bind_host=10.78.0.3
for p in "${pids[@]}"; do wait "$p" || fail "a process on the namespace hosts exited $?"; done
pids=()
grep -q "the previous stage connects to tcp://10.78.0.3:" "$work/worker1.log" ||
  fail "stage 1 does not listen on the second plane"
"$bin/psrt-launch" "$file" "${sets[@]}" --set cluster.servers=1 \
  --set "job.dump_params=$work/lo-{rank}.bin" >"$work/loopback.log" 2>&1 ||
  fail "the loopback run failed"
for r in 0 1; do
  cmp -s "$work/p-$r.bin" "$work/lo-$r.bin" || fail "stage $r's parameters differ from loopback's"
done
echo "PASS: stages over the second plane, parameters as on loopback"
