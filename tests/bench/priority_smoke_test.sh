#!/bin/bash
# psrt-bench-priority --smoke with --timelines: the driver runs every part at smoke size, and every
# job it ran left its timelines (job.timeline) in its log folder. Figures are never asserted.
set -u
bench=$1
fail() { echo "FAIL: $*" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
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
