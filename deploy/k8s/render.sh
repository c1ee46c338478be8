#!/usr/bin/env bash
# render.sh: the Kubernetes manifests of one psrt job, on standard output (kubectl apply -f -).
#
#   deploy/k8s/render.sh JOB.yaml [--name NAME] [--image IMAGE] [--namespace NS] [--gpu]
#                                 [--port PORT] [--cpu N] [--memory SIZE]
#
# Renders psrt.yaml.in: a ConfigMap with the job file, a headless Service through which server 0
# (the coordinator) is reached as NAME-server-0.NAME, and the servers and workers as two Indexed
# Jobs whose completion index is the rank. --gpu gives each worker one nvidia.com/gpu and
# model.backend: gpu. Needs psrt-launch (PSRT_BIN, default build/bin) to read the cluster size.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${PSRT_BIN:-$here/../../build/bin}
die() { echo "render.sh: $*" >&2; exit 2; }
usage="usage: render.sh JOB.yaml [--name NAME] [--image IMAGE] [--namespace NS] [--gpu] [--port PORT] [--cpu N] [--memory SIZE]"
[[ $# -ge 1 ]] || die "$usage"
if [[ $1 == -h || $1 == --help ]]; then
  sed -n '2,10s/^# \{0,1\}//p' "$0"
  exit 0
fi
job=$1
shift
name=psrt image=psrt:latest namespace=default port=29500 cpu=1 memory=2Gi gpu=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --name) name=${2:?}; shift 2 ;;
    --image) image=${2:?}; shift 2 ;;
    --namespace) namespace=${2:?}; shift 2 ;;
    --port) port=${2:?}; shift 2 ;;
    --cpu) cpu=${2:?}; shift 2 ;;
    --memory) memory=${2:?}; shift 2 ;;
    --gpu) gpu=1; shift ;;
    *) die "unknown option $1" ;;
  esac
done
[[ $name =~ ^[a-z]([-a-z0-9]{0,30}[a-z0-9])?$ ]] || die "--name '$name' is not a DNS label"
# What goes into the manifest as it is (an '&' became the matched text in awk's gsub).
[[ $image =~ ^[A-Za-z0-9][A-Za-z0-9._/:@-]*$ ]] || die "--image '$image' is not an image reference"
[[ $namespace =~ ^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$ ]] || die "--namespace '$namespace' is not a DNS label"
[[ $cpu =~ ^[0-9]+(\.[0-9]+|m)?$ && $cpu =~ [1-9] ]] || die "--cpu '$cpu' is not a CPU quantity above 0 (2, 0.5, 500m)"
[[ $memory =~ ^[0-9]+(Ki|Mi|Gi|Ti|k|M|G|T)?$ && $memory =~ ^0*[1-9] ]] || die "--memory '$memory' is not a memory quantity above 0 (2Gi)"
[[ $port =~ ^[0-9]+$ ]] && ((port > 0 && port < 65526)) || die "--port '$port' must be 1..65525"
[[ -f $job ]] || die "no job file '$job'"
sizes=$("$bin/psrt-launch" --check "$job") || exit 2
servers=$(sed -n 's/.*: \([0-9]*\) servers, \([0-9]*\) workers.*/\1/p' <<<"$sizes")
workers=$(sed -n 's/.*: \([0-9]*\) servers, \([0-9]*\) workers.*/\2/p' <<<"$sizes")
backend=""
gpu_limit=""
if ((gpu)); then
  backend=', "--set", "model.backend=gpu"'
  gpu_limit="nvidia.com/gpu: 1"
fi
awk -v name="$name" -v image="$image" -v ns="$namespace" -v port="$port" -v cpu="$cpu" \
    -v mem="$memory" -v servers="$servers" -v workers="$workers" -v backend="$backend" \
    -v gpu="$gpu_limit" -v last=$((port + 9)) -v first=$((port + 1)) -v jobfile="$job" '
  {
    gsub(/@NAME@/, name); gsub(/@IMAGE@/, image); gsub(/@NAMESPACE@/, ns);
    gsub(/@PORT@/, port); gsub(/@PORT_FIRST@/, first); gsub(/@PORT_LAST@/, last);
    gsub(/@CPU@/, cpu); gsub(/@MEMORY@/, mem);
    gsub(/@SERVERS@/, servers); gsub(/@WORKERS@/, workers); gsub(/@BACKEND_SET@/, backend);
    if ($0 ~ /@GPU_LIMIT@/) { if (gpu == "") next; gsub(/@GPU_LIMIT@/, gpu); }
    if ($0 ~ /@JOB_FILE@/) { while ((getline line < jobfile) > 0) print "    " line; next }
    print
  }' "$here/psrt.yaml.in"
