#!/usr/bin/env bash
# Fresh machine to a trained model: installs the Debian packages, builds psrt, and runs the main
# job (examples/quickstart.yaml: 2 servers and 2 workers train an MLP on Fashion-MNIST).
set -euo pipefail
cd "$(dirname "$0")/.."
bash deploy/install-deps.sh
bash deploy/build.sh
exec build/bin/psrt-launch examples/quickstart.yaml "$@"
