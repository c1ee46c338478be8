#!/usr/bin/env bash
# Installs the Debian packages that psrt's build, tests and main job need.
# Runs as root without prompts; quick when everything is already installed.
set -euo pipefail

packages=(
  cmake g++ make pkg-config
  libzmq3-dev cppzmq-dev
  libprotobuf-dev protobuf-compiler
  libyaml-cpp-dev libspdlog-dev libcli11-dev catch2
  libopenblas-dev zlib1g-dev
  dataset-fashion-mnist
  iproute2 gnuplot-nox python3-yaml
)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ $status == "install ok installed" ]] || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null; then SUDO=sudo; else
    echo "install-deps: missing packages (${missing[*]}) and not root; run as root" >&2
    exit 2
  fi
else
  SUDO=
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
