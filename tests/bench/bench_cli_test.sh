#!/bin/bash
# psrt-bench-compress and psrt-bench-engine on their command lines: --help prints the usage and
# exits 0 (compress exited 2; engine said "unknown option --help"), and a bad codec, model or
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
echo "$fails failure(s)"
[ "$fails" -eq 0 ]
