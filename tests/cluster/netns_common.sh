# Sourced by the namespace-host tests: `netns_setup STEM` skips (exit 77) without root or network
# namespaces, else sets $emunet, $prefix (STEM + pid) and $work (a temporary folder), and on exit
# kills the processes in $pids, removes the namespaces and the folder. `fail MESSAGE` prints it
# with the tail of every log in $work and exits 1. Expects $src (the source tree).
netns_setup() {
  emunet="$src/deploy/netem/emunet.sh"
  if [[ $(id -u) -ne 0 ]] || [[ $(bash "$emunet" check 2>/dev/null) != *"network namespaces: yes"* ]]; then
    echo "SKIP: network namespaces need root and CAP_NET_ADMIN"
    exit 77
  fi
  prefix="$1$(($$ % 100000))"
  work=$(mktemp -d "/tmp/psrt-$1.XXXXXX")
  pids=()
  trap netns_cleanup EXIT
}
netns_cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
  bash "$emunet" down --prefix "$prefix" >/dev/null 2>&1
  rm -rf "$work"
}
fail() { echo "FAIL: $*"; for f in "$work"/*.log; do echo "--- $f"; tail -5 "$f"; done; exit 1; }
