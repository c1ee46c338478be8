#!/bin/bash
# psrt-bench-compress, -engine, -transport and -placement on their command lines: --help prints
# the usage and exits 0 (compress exited 2; engine said "unknown option --help"), and a bad codec, model or
# batch is one line, exit 2, before any measurement (compress ran its memcpy baseline, then
# exited 1; engine printed its table headers, then exited 1; --batch 100000000 did not say the
# range). Usage: bench_cli_test.sh BIN_DIR
set -u
bin=$1
fails=0
check() {  # WHAT WANT_RC WANT_IN_STDERR(empty: stderr empty, usage on stdout) -- ARGV...
  local what=$1 want_rc=$2 want=$3 out err rc
  shift 4
  out=$(timeout 60 "$@" 2>"$tmp")
  rc=$?
  err=$(<"$tmp")
  if [ -z "$want" ]; then
    [ "$rc" -eq "$want_rc" ] && [ -z "$err" ] && grep -q "^usage: " <<<"$out"
  else
    [ "$rc" -eq "$want_rc" ] && [ -z "$out" ] && [ "$(wc -l <<<"$err")" -eq 1 ] &&
      grep -qF -- "$want" <<<"$err"
  fi
  if [ $? -eq 0 ]; then
    echo "ok   $what"
  else
    echo "FAIL $what: exit $rc (want $want_rc), stdout: ${out:0:300} stderr: ${err:0:300}"
    fails=$((fails + 1))
  fi
}
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
compress=$bin/psrt-bench-compress
engine=$bin/psrt-bench-engine
check "compress --help: usage, exit 0" 0 "" -- "$compress" --help
check "compress --codecs bogus: exit 2 before the baseline" 2 "--codecs: 'bogus'" -- \
  "$compress" --smoke --codecs none,bogus
check "compress --codecs ',': exit 2" 2 "--codecs: no codec" -- "$compress" --codecs ,
check "engine --help: usage, exit 0" 0 "" -- "$engine" --help
check "engine --batch 100000000: the range said" 2 "--batch needs an integer from 1 to 1000000" -- \
  "$engine" --batch 100000000
check "engine --models bogus: exit 2 before the tables" 2 "--models: " -- \
  "$engine" --smoke --no-torch --models lenet5,bogus
check "engine --models '': exit 2" 2 "--models: no model given" -- "$engine" --models ""
# psrt-bench-transport said only "server 0 did not start" (exit 1) for a setting the server refused,
# and left its temporary folder; psrt-bench-placement exited 109 on a bad flag.
transport=$bin/psrt-bench-transport
before=$(find /tmp -maxdepth 1 -name 'psrt-bench-transport-*' | wc -l)
check "transport --chunk-bytes 1: the job's reason, exit 2" 2 \
  "scheduler.chunk_bytes: 1 is out of range" -- "$transport" --smoke --chunk-bytes 1
after=$(find /tmp -maxdepth 1 -name 'psrt-bench-transport-*' | wc -l)
if [ "$after" -le "$before" ]; then echo "ok   transport: no folder left"; else
  echo "FAIL transport: its temporary folder was left"; fails=$((fails + 1)); fi
check "placement --bogus: exit 2" 2 "(see --help)" -- "$bin/psrt-bench-placement" --bogus
# --out "" wrote /placement.csv.
check "placement --out \"\": exit 2" 2 "an empty folder name" -- \
  "$bin/psrt-bench-placement" --out ""
# psrt-sim out of memory (a queue per server and worker) ended in std::terminate, exit 134.
profiles=$(cd "$(dirname "$0")/../../bench/profiles" && pwd)
err=$(timeout 120 prlimit --as=400000000 "$bin/psrt-sim" --profile "$profiles/lenet5.yaml" \
  --workers 20000 --servers 1024 2>&1 >/dev/null)
rc=$?
if [ "$rc" -eq 1 ] && grep -qF "psrt-sim: out of memory simulating 20000 workers" <<<"$err"; then
  echo "ok   psrt-sim out of memory: one line, exit 1"
else
  echo "FAIL psrt-sim out of memory: exit $rc, ${err:0:300}"; fails=$((fails + 1))
fi
echo "$fails failure(s)"
[ "$fails" -eq 0 ]
