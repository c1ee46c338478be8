#!/bin/bash
# psrt-bench-priority --smoke with --timelines: the driver runs every part at smoke size, and every
# job it ran left its timelines (job.timeline) in its log folder. Figures are never asserted.
# First, a zero --rate and an unknown model are refused before anything starts.
set -u
bench=$1
fail() { echo "FAIL: $*" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Arguments it cannot run with: one line, exit 2, before the network is set up (a rate of zero
# ran unshaped then divided by zero; a model without a profile failed once the network was up).
for args in "--rate 0mbit" "--rate 0gbit --smoke" "--models bogus" "--smoke --models mlp,bogus"; do
  err=$("$bench" $args --workdir "$work/bad" 2>&1 >/dev/null)
  rc=$?
  [ "$rc" -eq 2 ] && [ "$(wc -l <<<"$err")" -eq 1 ] ||
    fail "psrt-bench-priority $args: exit $rc, want 2 and one line: $err"
  [ ! -e "$work/bad" ] || fail "psrt-bench-priority $args: started (made its work folder)"
done
"$bench" --smoke --timelines --workdir "$work" || fail "psrt-bench-priority --smoke exited $?"
jobs=0
for cfg in "$work"/*/job.yaml; do
  [ -e "$cfg" ] || fail "no job folder in $work"
  dir=$(dirname "$cfg")
  jobs=$((jobs + 1))
  grep -q '^timeline: ' "$cfg" || fail "$cfg sets no timeline"
  for f in worker-0 worker-1 server-0; do
    [ -s "$dir/timeline/$f.json" ] || fail "$dir/timeline/$f.json missing"
  done
  grep -q '"cat":"forward"' "$dir/timeline/worker-0.json" || fail "$dir: worker 0 timed no forward"
  grep -q '"cat":"push"' "$dir/timeline/worker-0.json" || fail "$dir: worker 0 timed no push"
done
echo "$jobs jobs, each with its timelines"
