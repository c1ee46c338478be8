#!/usr/bin/env bash
# selftest.sh: Slurm for real on this one machine. Installs Debian's slurm-wlm and munge where
# missing, starts munged (unless one runs), slurmctld and two slurmd as fake nodes n1 and n2
# (`slurmd -N`), submits a short quickstart with psrt.sbatch (2 servers + 2 workers over both
# nodes), waits for it, checks that it trained to the same test accuracy as the same job under
# psrt-launch, and tears everything down (also on failure or Ctrl-C).
#
#   bash deploy/slurm/selftest.sh [BIN_DIR]      (root; exit 77 = cannot run here)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
bin=$(cd "${1:-$repo/build/bin}" && pwd) || { echo "FAIL: no folder ${1:-$repo/build/bin}"; exit 1; }
[[ $(id -u) -eq 0 ]] || { echo "SKIP: the Slurm self-test runs its daemons as root"; exit 77; }
if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  echo "selftest: installing slurm-wlm and munge"
  export DEBIAN_FRONTEND=noninteractive
  { apt-get install -y -q --no-install-recommends slurm-wlm munge >/dev/null 2>&1 ||
    { apt-get update -q >/dev/null 2>&1 &&
      apt-get install -y -q --no-install-recommends slurm-wlm munge >/dev/null 2>&1; }; } ||
    { echo "SKIP: slurm-wlm and munge cannot be installed here"; exit 77; }
fi
dir=$(mktemp -d /tmp/psrt-slurm.XXXXXX)
chmod 755 "$dir"
pids=()
our_munged=""
cleanup() {
  [[ -n ${SLURM_CONF:-} ]] && scancel --quiet --user=root >/dev/null 2>&1
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  [[ -n $our_munged ]] && kill "$(cat "$dir/munged.pid" 2>/dev/null)" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
fail() {
  echo "FAIL: $*"
  for f in "$dir"/*.log "$dir"/psrt-*.out; do [[ -f $f ]] && { echo "--- $f"; tail -15 "$f"; }; done
  exit 1
}

# munge: the daemon Slurm authenticates with. One already running (a real host) is used as it is.
if ! munge -n </dev/null >/dev/null 2>&1; then
  [[ -f /etc/munge/munge.key ]] || { dd if=/dev/urandom of=/etc/munge/munge.key bs=1k count=1 2>/dev/null
                                     chmod 400 /etc/munge/munge.key; }
  mkdir -p /run/munge /var/log/munge /var/lib/munge
  munged --force --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" || fail "munged did not start"
  our_munged=1
  munge -n </dev/null >/dev/null 2>&1 || fail "munge does not work"
fi

# Ports from the process id, so two self-tests (or a real Slurm) on one machine do not collide.
base=$((17000 + ($$ % 400) * 10))
cat >"$dir/slurm.conf" <<CONF
ClusterName=psrttest
SlurmctldHost=$(hostname)(127.0.0.1)
SlurmctldPort=$base
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool-%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd-%n.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName=n1 NodeHostname=$(hostname) NodeAddr=127.0.0.1 Port=$((base + 1)) CPUs=2 State=UNKNOWN
NodeName=n2 NodeHostname=$(hostname) NodeAddr=127.0.0.1 Port=$((base + 2)) CPUs=2 State=UNKNOWN
PartitionName=psrt Nodes=n1,n2 Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE
CONF
mkdir -p "$dir/state"
export SLURM_CONF=$dir/slurm.conf
slurmctld -D -i -f "$SLURM_CONF" >"$dir/slurmctld.out.log" 2>&1 &
pids+=($!)
for n in n1 n2; do
  mkdir -p "$dir/spool-$n"
  slurmd -D -N "$n" -f "$SLURM_CONF" >"$dir/slurmd-$n.out.log" 2>&1 &
  pids+=($!)
done
for _ in $(seq 120); do
  idle=$(sinfo -h -N -o "%N %t" 2>/dev/null | grep -c idle)
  [[ $idle -eq 2 ]] && break
  sleep 0.5
done
[[ ${idle:-0} -eq 2 ]] || fail "the two fake nodes did not come up: $(sinfo -N 2>&1 | tr '\n' ' ')"
echo "selftest: slurmctld and slurmd n1, n2 up: $(sinfo -h -o '%P %D %t %N')"

sets=(--set job.iterations=200 --set job.log_every=100 --set cluster.start_timeout_s=60)
job="$repo/examples/quickstart.yaml"
cd "$dir" || fail "cd"
PSRT_BIN=$bin PSRT_SLURM_DIR=$here sbatch --wait --ntasks=4 --nodes=2 --time=10 \
  --output="$dir/psrt-%j.out" "$here/psrt.sbatch" "$job" "${sets[@]}" >"$dir/sbatch.log" 2>&1 ||
  fail "the Slurm job failed: $(cat "$dir/sbatch.log")"
out=$(ls "$dir"/psrt-*.out)
slurm_acc=$(grep -o "test accuracy: [0-9.]*" "$out")
"$bin/psrt-launch" "$job" "${sets[@]}" >"$dir/launch.log" 2>&1 || fail "the psrt-launch run failed"
local_acc=$(grep -o "test accuracy: [0-9.]*" "$dir/launch.log")
grep -h "psrt.sbatch:" "$out"
[[ -n $slurm_acc && $slurm_acc == "$local_acc" ]] ||
  fail "Slurm run '$slurm_acc' differs from the psrt-launch run '$local_acc'"
echo "PASS: sbatch psrt.sbatch trained the quickstart on 2 Slurm nodes: $slurm_acc (psrt-launch: $local_acc)"
