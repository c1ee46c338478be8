#!/usr/bin/env bash
# Servers and workers started one per host, not by psrt-launch: each host is a network namespace
# with its own address (deploy/netem/emunet.sh), each process gets its rank and addresses from the
# environment as a cluster manager would give them, servers bind every interface (0.0.0.0) and
# advertise their host's address, server 1 binds inside cluster.port_range. The same job on
# loopback under psrt-launch must end with the same parameters, bit for bit, and the same accuracy.
# Usage: netns_hosts_test.sh BIN_DIR SOURCE_DIR. Exit 77 (skipped) without root or namespaces.
# PSRT_NETNS_ITERATIONS=0 trains the whole quickstart (10 epochs) instead of 200 iterations.
set -uo pipefail
bin=$1
src=$2
source "$(dirname "$0")/netns_common.sh"
netns_setup pc

bash "$emunet" up --hosts 4 --rate 1gbit --prefix "$prefix" >/dev/null || fail "emunet up"
addr() { bash "$emunet" addr --prefix "$prefix" "$1"; }
coord="tcp://$(addr 0):29500"
file="$src/examples/quickstart.yaml"
sets=(--set job.iterations=${PSRT_NETNS_ITERATIONS:-200} --set job.log_every=100 --set cluster.start_timeout_s=60)
job=(--config "$file" "${sets[@]}")

on_host() {  # on_host I LOGNAME ENV... -- CMD...
  local i=$1 log=$2
  shift 2
  ip netns exec "$prefix-h$i" env PSRT_COORDINATOR="$coord" PSRT_BIND_HOST=0.0.0.0 \
    PSRT_ADVERTISE_HOST="$(addr "$i")" "$@" >"$work/$log.log" 2>&1 &
  pids+=($!)
}
on_host 0 server0 PSRT_ROLE=server PSRT_RANK=0 "$bin/psrt-server" "${job[@]}" \
  --set "job.dump_params=$work/net-{rank}.bin"
on_host 1 server1 PSRT_ROLE=server SLURM_PROCID=1 "$bin/psrt-server" "${job[@]}" \
  --set "cluster.port_range=[30000, 30009]" --set "job.dump_params=$work/net-{rank}.bin"
on_host 2 worker0 PSRT_ROLE=worker RANK=0 "$bin/psrt-worker" "${job[@]}" \
  --set "job.dump_params=$work/net-w{rank}.bin"
on_host 3 worker1 PSRT_ROLE=worker OMPI_COMM_WORLD_RANK=1 "$bin/psrt-worker" "${job[@]}" \
  --set "job.dump_params=$work/net-w{rank}.bin"
for p in "${pids[@]}"; do wait "$p" || fail "a process on the namespace hosts exited $?"; done
pids=()
grep -q "listening on tcp://$(addr 1):3000" "$work/server1.log" ||
  fail "server 1 did not advertise its host's address inside the port range"

"$bin/psrt-launch" "$file" "${sets[@]}" --set "job.dump_params=$work/lo-w{rank}.bin" >"$work/loopback.log" 2>&1 ||
  fail "the loopback run failed"

net_acc=$(grep -o "test accuracy: [0-9.]*" "$work/worker0.log")
lo_acc=$(grep -o "test accuracy: [0-9.]*" "$work/loopback.log")
[[ -n $net_acc && $net_acc == "$lo_acc" ]] || fail "accuracy differs: hosts '$net_acc', loopback '$lo_acc'"
for r in 0 1; do
  cmp -s "$work/net-w$r.bin" "$work/lo-w$r.bin" || fail "worker $r's parameters differ from loopback"
done
echo "PASS: 2 servers + 2 workers on 4 namespace hosts ($(addr 0) .. $(addr 3)) match loopback: $net_acc"
