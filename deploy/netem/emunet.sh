#!/bin/bash
# emunet.sh: an emulated cluster network on one machine. Each host (server or worker) lives in its
# own network namespace PREFIX-hI with one interface eth0 = 10.77.0.(I+1)/24, joined by a veth pair
# to a bridge in a namespace of its own (PREFIX-sw); nothing is added to the root namespace. Each
# host's egress is shaped with tc tbf at RATE, and so is the bridge port towards the host, so both
# directions of every host's link are shaped; --delay adds a netem delay on each host's egress
# (one way; a round trip between two hosts crosses two egresses: 2 x delay) where the kernel has
# netem. --planes 2 gives every host a second link, eth1 = 10.78.0.(I+1)/24, on a second bridge
# shaped the same way: two networks side by side (e.g. a device interconnect for a model's pipeline
# stages beside the network to the parameter servers); traffic takes the plane of the address it is
# sent to.
#
#   emunet.sh check                                         what works here
#   emunet.sh up   --hosts N --rate 1gbit [--delay 0.1ms] [--planes 2] [--prefix psrt]
#   emunet.sh down [--prefix psrt]                          removes all PREFIX-* namespaces
#   emunet.sh run  --hosts N --rate R [--delay D] [--prefix P] -- CMD [ARGS...]
#                  up, CMD, down (also on failure and Ctrl-C); exits with CMD's status
#   emunet.sh exec [--prefix P] I -- CMD [ARGS...]          CMD inside host I
#   emunet.sh addr [--prefix P] I                           host I's address
#   emunet.sh measure [--prefix P] [--bytes N] A B          TCP throughput from host A to host B
#
# Where namespaces cannot be made (not root, no CAP_NET_ADMIN, a container without them), up and
# run print a warning and fall back to loopback: every host's address is 127.0.0.1, nothing is
# shaped. run exports PSRT_EMUNET_HOSTS (the addresses, host 0 first), PSRT_EMUNET_PREFIX and
# PSRT_EMUNET_MODE (netns or loopback) to CMD.
#
# Only addresses inside 10.77.0.0/24 (in the namespaces made here) and loopback are ever used.
set -u

SUBNET=10.77.0
SUBNET2=10.78.0
prog=emunet
prefix=psrt
hosts=""
rate=""
delay=""
planes=1
bytes=$((20 * 1000 * 1000))

die() { echo "$prog: $*" >&2; exit 2; }
warn() { echo "$prog: WARNING: $*" >&2; }

usage() {
  sed -n '2,/^set -u/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
  exit 2
}

# ---------------------------------------------------------------- argument parsing
parse_opts() {
  while [ $# -gt 0 ]; do
    case "$1" in
      --hosts) hosts=${2:-}; shift 2 || die "--hosts needs a value" ;;
      --rate) rate=${2:-}; shift 2 || die "--rate needs a value" ;;
      --delay) delay=${2:-}; shift 2 || die "--delay needs a value" ;;
      --planes) planes=${2:-}; shift 2 || die "--planes needs a value" ;;
      --prefix) prefix=${2:-}; shift 2 || die "--prefix needs a value" ;;
      --bytes) bytes=${2:-}; shift 2 || die "--bytes needs a value" ;;
      --) shift; rest=("$@"); return ;;
      -h|--help) usage ;;
      -*) die "unknown option '$1'" ;;
      *) positional+=("$1"); shift ;;
    esac
  done
}

check_prefix() {
  [[ "$prefix" =~ ^[a-z][a-z0-9]{0,9}$ ]] ||
    die "--prefix '$prefix': lower-case letters and digits, starting with a letter, at most 10"
}

check_hosts() {
  [[ "$hosts" =~ ^[0-9]+$ ]] && [ "$hosts" -ge 1 ] && [ "$hosts" -le 250 ] ||
    die "--hosts '$hosts': a number from 1 to 250"
}

# Bits per second of a tc rate (bit, kbit, mbit, gbit; any case), or die.
rate_bits() {
  local r=${1,,}
  [[ "$r" =~ ^([0-9]+)(bit|kbit|mbit|gbit)$ ]] ||
    die "--rate '$1': a whole number with bit, kbit, mbit or gbit (e.g. 100mbit, 1gbit)"
  # 10#: decimal, also with leading zeros (bash reads 010 as octal). Zero is refused: tc's tbf
  # rejects it and every link was left unshaped while "up" reported success.
  local n=$((10#${BASH_REMATCH[1]}))
  [ "$n" -gt 0 ] || die "--rate '$1': must be above zero (e.g. 100mbit, 1gbit)"
  case ${BASH_REMATCH[2]} in
    bit) echo "$n" ;;
    kbit) echo $((n * 1000)) ;;
    mbit) echo $((n * 1000000)) ;;
    gbit) echo $((n * 1000000000)) ;;
  esac
}

check_delay() {
  [[ "${delay,,}" =~ ^[0-9]+(\.[0-9]+)?(us|ms|s)$ ]] ||
    die "--delay '$delay': a time with us, ms or s (e.g. 0.1ms)"
}

ns_host() { echo "$prefix-h$1"; }
ns_switch() { echo "$prefix-sw"; }
addr_of() { echo "$SUBNET.$(($1 + 1))"; }

our_namespaces() {
  ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$prefix-(h[0-9]+|sw)$" || true
}

# ---------------------------------------------------------------- capabilities
can_netns() {
  local probe="$prefix-probe$$"
  ip netns add "$probe" 2>/dev/null || return 1
  ip netns del "$probe" 2>/dev/null
  return 0
}

have_netem() {
  local probe="$prefix-probe$$" ok=1
  ip netns add "$probe" 2>/dev/null || return 1
  ip -n "$probe" link set lo up 2>/dev/null
  tc -n "$probe" qdisc add dev lo root netem delay 1ms 2>/dev/null && ok=0
  ip netns del "$probe" 2>/dev/null
  return $ok
}

cmd_check() {
  local probe="$prefix-probe$$" tbf=no netem=no bridge=no
  if ! can_netns; then
    echo "network namespaces: no (ip netns add failed; uid $(id -u)): emunet falls back to loopback"
    return 0
  fi
  echo "network namespaces: yes"
  ip netns add "$probe"
  ip -n "$probe" link set lo up
  tc -n "$probe" qdisc add dev lo root tbf rate 100mbit burst 64kb latency 50ms 2>/dev/null &&
    tbf=yes
  tc -n "$probe" qdisc del dev lo root 2>/dev/null
  tc -n "$probe" qdisc add dev lo root netem delay 1ms 2>/dev/null && netem=yes
  ip -n "$probe" link add br0 type bridge 2>/dev/null && bridge=yes
  ip netns del "$probe"
  echo "veth + bridge: $bridge"
  echo "tc tbf: $tbf"
  echo "tc netem: $netem$([ $netem = no ] && echo ' (--delay is ignored here)')"
}

# ---------------------------------------------------------------- up / down
cmd_down() {
  local ns pid
  for ns in $(our_namespaces); do
    # Processes left inside our namespaces were started there through this script: end them.
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill "$pid" 2>/dev/null; done
  done
  for ns in $(our_namespaces); do
    ip netns del "$ns" 2>/dev/null || warn "could not delete namespace $ns"
  done
  [ -z "$(our_namespaces)" ] || die "namespaces left behind: $(our_namespaces | tr '\n' ' ')"
}

print_hosts() {
  local i list=""
  for ((i = 0; i < hosts; i++)); do
    if [ "$1" = netns ]; then
      echo "host $i: namespace $(ns_host $i), address $(addr_of $i)"
      list+="$(addr_of $i) "
    else
      list+="127.0.0.1 "
    fi
  done
  [ "$1" = loopback ] && echo "all $hosts hosts: address 127.0.0.1 (loopback, unshaped)"
  echo "PSRT_EMUNET_HOSTS=\"${list% }\""
}

# Creates the namespaces; on any failure removes what it made. Returns 1 when namespaces cannot
# be made at all (the caller falls back to loopback).
do_up() {
  local bits burst sw i ns use_netem=0
  bits=$(rate_bits "$rate") || exit 2
  [ -n "$delay" ] && check_delay
  [ -z "$(our_namespaces)" ] || die "namespaces with prefix '$prefix' exist; run: $0 down --prefix $prefix"
  can_netns || return 1
  if [ -n "$delay" ]; then
    if have_netem; then use_netem=1; else warn "this kernel has no netem: --delay $delay ignored"; fi
  fi
  # tbf burst: 5 ms at the rate, at least 64 KiB (veth hands over GSO segments up to 64 KiB).
  burst=$((bits / 8 / 200))
  [ "$burst" -ge 65536 ] || burst=65536
  sw=$(ns_switch)
  trap 'echo "$prog: setting up failed; removing what was made" >&2; cmd_down; exit 1' ERR
  set -E
  ip netns add "$sw"
  ip -n "$sw" link set lo up
  ip -n "$sw" link add br0 type bridge
  ip -n "$sw" link set br0 up
  if [ "$planes" = 2 ]; then
    ip -n "$sw" link add br1 type bridge
    ip -n "$sw" link set br1 up
  fi
  for ((i = 0; i < hosts; i++)); do
    ns=$(ns_host $i)
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 2>/dev/null || true
    ip -n "$sw" link add "p$i" type veth peer name eth0 netns "$ns"
    ip -n "$sw" link set "p$i" master br0
    ip -n "$sw" link set "p$i" up
    ip -n "$ns" addr add "$(addr_of $i)/24" dev eth0
    ip -n "$ns" link set eth0 up
    if [ $use_netem = 1 ]; then
      tc -n "$ns" qdisc add dev eth0 root handle 1: netem delay "$delay"
      tc -n "$ns" qdisc add dev eth0 parent 1:1 handle 10: tbf rate "$rate" burst "$burst" latency 50ms
    else
      tc -n "$ns" qdisc add dev eth0 root tbf rate "$rate" burst "$burst" latency 50ms
    fi
    tc -n "$sw" qdisc add dev "p$i" root tbf rate "$rate" burst "$burst" latency 50ms
    if [ "$planes" = 2 ]; then
      ip -n "$sw" link add "q$i" type veth peer name eth1 netns "$ns"
      ip -n "$sw" link set "q$i" master br1
      ip -n "$sw" link set "q$i" up
      ip -n "$ns" addr add "$SUBNET2.$((i + 1))/24" dev eth1
      ip -n "$ns" link set eth1 up
      tc -n "$ns" qdisc add dev eth1 root tbf rate "$rate" burst "$burst" latency 50ms
      tc -n "$sw" qdisc add dev "q$i" root tbf rate "$rate" burst "$burst" latency 50ms
    fi
  done
  trap - ERR
  set +E
  return 0
}

cmd_up() {
  check_prefix
  check_hosts
  [ -n "$rate" ] || die "--rate is required (e.g. --rate 1gbit)"
  [[ "$planes" =~ ^[12]$ ]] || die "--planes '$planes': 1 or 2"
  if do_up; then
    echo "$prog: $hosts hosts up at $rate${delay:+, delay $delay per egress} (prefix $prefix)"
    print_hosts netns
  else
    warn "cannot create network namespaces (need root / CAP_NET_ADMIN); falling back to loopback:" \
         "NO shaping, use 127.0.0.1 for every host"
    print_hosts loopback
  fi
}

cmd_run() {
  check_prefix
  check_hosts
  [ -n "$rate" ] || die "--rate is required (e.g. --rate 1gbit)"
  [ ${#rest[@]} -gt 0 ] || die "run needs a command after --"
  local mode=netns i list="" status
  trap 'cmd_down; exit 130' INT
  trap 'cmd_down; exit 143' TERM
  trap 'cmd_down' EXIT
  if ! do_up; then
    mode=loopback
    trap - EXIT INT TERM
    warn "cannot create network namespaces (need root / CAP_NET_ADMIN); falling back to loopback:" \
         "NO shaping, every host is 127.0.0.1"
  fi
  for ((i = 0; i < hosts; i++)); do
    if [ $mode = netns ]; then list+="$(addr_of $i) "; else list+="127.0.0.1 "; fi
  done
  export PSRT_EMUNET_HOSTS="${list% }" PSRT_EMUNET_PREFIX="$prefix" PSRT_EMUNET_MODE="$mode"
  "${rest[@]}"
  status=$?
  return $status
}

host_index() {
  [[ "${1:-}" =~ ^[0-9]+$ ]] || die "a host index (0, 1, ...) is required, got '${1:-}'"
}

cmd_exec() {
  check_prefix
  host_index "${positional[0]:-}"
  [ ${#rest[@]} -gt 0 ] || die "exec needs a command after --"
  local ns
  ns=$(ns_host "${positional[0]}")
  if ip netns list 2>/dev/null | awk '{print $1}' | grep -qx "$ns"; then
    exec ip netns exec "$ns" "${rest[@]}"
  elif [ "${PSRT_EMUNET_MODE:-}" = loopback ]; then
    exec "${rest[@]}"
  fi
  die "no host ${positional[0]} (namespace $ns does not exist; run up first)"
}

cmd_addr() {
  check_prefix
  host_index "${positional[0]:-}"
  if [ "${PSRT_EMUNET_MODE:-}" = loopback ]; then echo 127.0.0.1; else addr_of "${positional[0]}"; fi
}

# TCP throughput from host A to host B: a receiver in B signals that it listens, a sender in A
# writes --bytes bytes; the receiver times first to last byte and prints Mbit/s.
cmd_measure() {
  check_prefix
  host_index "${positional[0]:-}"
  host_index "${positional[1]:-}"
  [[ "$bytes" =~ ^[0-9]+$ ]] || die "--bytes '$bytes': a number of bytes"
  local a=${positional[0]} b=${positional[1]} to line result
  to=$(cmd_addr_of "$b")
  local py=/usr/bin/python3
  [ -x $py ] || py=python3
  coproc RECV { "$0" exec --prefix "$prefix" "$b" -- $py -u -c '
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], 0)); s.listen(1)
print("ready", s.getsockname()[1], flush=True)
c, _ = s.accept(); n = 0; t0 = None
while True:
    d = c.recv(1 << 16)
    if not d: break
    if t0 is None: t0 = time.monotonic()
    n += len(d)
dt = time.monotonic() - t0
print("%d %.6f %.2f" % (n, dt, n * 8 / dt / 1e6), flush=True)
' "$to"; }
  read -r line <&"${RECV[0]}" || die "measure: the receiver in host $b did not start"
  local port=${line#ready }
  "$0" exec --prefix "$prefix" "$a" -- $py -c '
import socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])))
buf = b"\0" * (1 << 16); left = int(sys.argv[3])
while left > 0:
    k = s.send(buf[:min(left, len(buf))]); left -= k
s.close()
' "$to" "$port" "$bytes" || die "measure: the sender in host $a failed"
  read -r result <&"${RECV[0]}" || die "measure: no result from the receiver"
  wait "$RECV_PID" 2>/dev/null
  local n secs mbit
  read -r n secs mbit <<<"$result"
  echo "host $a -> host $b: $n bytes in $secs s: $mbit Mbit/s"
}

cmd_addr_of() {
  if [ "${PSRT_EMUNET_MODE:-}" = loopback ]; then echo 127.0.0.1; else addr_of "$1"; fi
}

# ---------------------------------------------------------------- main
[ $# -ge 1 ] || usage
sub=$1
shift
positional=()
rest=()
parse_opts "$@"
case "$sub" in
  check) cmd_check ;;
  up) cmd_up ;;
  down) check_prefix; cmd_down; echo "$prog: prefix $prefix: nothing left" ;;
  run) cmd_run ;;
  exec) cmd_exec ;;
  addr) cmd_addr ;;
  measure) cmd_measure ;;
  -h|--help|help) usage ;;
  *) die "unknown command '$sub' (check, up, down, run, exec, addr, measure)" ;;
esac
