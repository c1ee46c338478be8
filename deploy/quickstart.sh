#!/usr/bin/env bash
# Fresh machine to a trained model: installs the Debian packages, builds psrt, and runs the main
# job: examples/lenet5.yaml (2 servers and 4 workers train LeNet-5 on Fashion-MNIST). Another job
# file may be given as the first argument, e.g. examples/quickstart.yaml (the MLP, about a minute);
# further arguments go to psrt-launch (--set key=value).
set -euo pipefail
cd "$(dirname "$0")/.."
config=examples/lenet5.yaml
if [[ $# -gt 0 && $1 != -* ]]; then
  config=$1
  shift
fi
bash deploy/install-deps.sh
bash deploy/build.sh
exec build/bin/psrt-launch "$config" "$@"
