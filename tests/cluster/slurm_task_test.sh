#!/usr/bin/env bash
# deploy/slurm/psrt-task.sh without Slurm: fake scontrol and daemons on PATH/PSRT_BIN. Each task
# runs its role with the rank from SLURM_PROCID, and takes the node's name as its address where
# scontrol gives no NodeAddr (it exited 1 silently under set -e, and srun ended the whole job).
set -uo pipefail
repo=$1
dir=$(mktemp -d /tmp/psrt-slurm-task.XXXXXX)
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/path" "$dir/bin"
for role in server worker; do
  printf '#!/bin/sh\necho "%s $* advertise=$PSRT_ADVERTISE_HOST bind=$PSRT_BIND_HOST"\n' "$role" \
    > "$dir/bin/psrt-$role"
done
task() {  # SCONTROL_OUTPUT SCONTROL_RC PROCID: what the task ran
  printf '#!/bin/sh\nprintf "%%s" "%s"\nexit %s\n' "$1" "$2" > "$dir/path/scontrol"
  chmod +x "$dir/path/scontrol" "$dir/bin/"*
  PATH="$dir/path:$PATH" SLURM_PROCID=$3 SLURMD_NODENAME=n7 PSRT_SERVERS=2 PSRT_BIN="$dir/bin" \
    PSRT_ADVERTISE_HOST='' bash "$repo/deploy/slurm/psrt-task.sh" job.yaml --set a=b
}
fail=0
expect() {  # WHAT GOT WANT
  if [[ $2 == "$3" ]]; then echo "ok: $1"; else echo "FAIL: $1: got '$2', want '$3'"; fail=1; fi
}
expect "NodeAddr" "$(task 'NodeName=n7 NodeAddr=10.1.2.3 State=IDLE' 0 1)" \
  "server --config job.yaml --rank 1 --set a=b advertise=10.1.2.3 bind=0.0.0.0"
expect "scontrol failing" "$(task '' 1 3)" \
  "worker --config job.yaml --rank 1 --set a=b advertise=n7 bind=0.0.0.0"
expect "no NodeAddr" "$(task 'NodeName=n7 State=IDLE' 0 0)" \
  "server --config job.yaml --rank 0 --set a=b advertise=n7 bind=0.0.0.0"
exit $fail
