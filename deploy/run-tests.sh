#!/usr/bin/env bash
# Fresh machine to a tested build: installs the Debian packages, builds psrt with warnings as
# errors, and runs the whole test suite (unit, integration, and the gpu tests, which report
# themselves skipped where there is no GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
bash deploy/install-deps.sh
bash deploy/build.sh -DPSRT_WERROR=ON
cd build
ctest --output-on-failure -j2 --timeout 600
