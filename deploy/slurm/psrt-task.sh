#!/usr/bin/env bash
# One task of psrt.sbatch: rank and role from SLURM_PROCID (servers first), the coordinator from
# PSRT_COORDINATOR, this host's address from PSRT_ADVERTISE_HOST or the node's NodeAddr in Slurm.
set -euo pipefail
: "${SLURM_PROCID:?psrt-task.sh runs under srun}" "${PSRT_SERVERS:?set by psrt.sbatch}"
export PSRT_BIND_HOST=${PSRT_BIND_HOST:-0.0.0.0}
if [[ -z ${PSRT_ADVERTISE_HOST:-} ]]; then
  node=${SLURMD_NODENAME:-$(hostname)}
  # No NodeAddr (scontrol failing on a compute node) is the node's name, not a silent exit 1 by
  # set -e, which srun --kill-on-bad-exit turned into the whole job's end with no reason.
  addr=$(scontrol show node "$node" 2>/dev/null | grep -o 'NodeAddr=[^ ]*' | cut -d= -f2) || true
  export PSRT_ADVERTISE_HOST=${addr:-$node}
fi
unset PSRT_RANK RANK  # the rank is given below, from SLURM_PROCID
if ((SLURM_PROCID < PSRT_SERVERS)); then
  exec "$PSRT_BIN/psrt-server" --config "$1" --rank "$SLURM_PROCID" "${@:2}"
fi
exec "$PSRT_BIN/psrt-worker" --config "$1" --rank "$((SLURM_PROCID - PSRT_SERVERS))" "${@:2}"
