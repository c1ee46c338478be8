#!/bin/bash
# psrt-sim prints one row per mode, and rejects bad arguments with one line and exit code 2.
set -u
sim=$1
profiles=$2
fail() { echo "FAIL: $*" >&2; exit 1; }

out=$("$sim" --profile "$profiles/resnet50.yaml" --workers 4 --servers 2 --bandwidth 1Gbit \
      --all-modes --scale 0.05 --jittered) || fail "psrt-sim --all-modes exited $?"
for m in bigdl fifo fifo_chunked nonpreemptive preemptive; do
  grep -q "^$m " <<<"$out" || fail "no row for $m in: $out"
done
# With --jittered each row is followed by its price under bandwidth jitter (what GradOptimizer
# minimises); without, nothing more is simulated.
[ "$(grep -c '^  jittered: [0-9.]* ms' <<<"$out")" -eq 5 ] || fail "want 5 jittered lines in: $out"
"$sim" --profile "$profiles/mlp.yaml" | grep -q jittered && fail "jittered line without --jittered"
# --waits: the layers whose forward waited, which with compute make up the iteration.
out=$("$sim" --profile "$profiles/resnet50.yaml" --workers 4 --servers 2 --bandwidth 1Gbit \
      --mode preemptive --scale 0.05 --waits --calibration "$profiles/../calibration/default.yaml") ||
  fail "psrt-sim --waits exited $?"
awk '/^preemptive / { iter = $2; compute = $3 }
     /^  waits: / { waits = $2; seen = 1 }
     END { d = iter - compute - waits; exit !(seen && waits > 0 && d < 0.02 && d > -0.02) }' \
  <<<"$out" || fail "--waits: want waits = iter_ms - compute_ms > 0 in: $out"
grep -q "waits: .* conv1 [0-9.]*" <<<"$out" || fail "--waits: no layer named in: $out"
awk '/^  io: / { seen = 1; ok = $2 > 0 && $2 <= 2 * 6 } END { exit !(seen && ok) }' <<<"$out" ||
  fail "--waits: want the I/O threads' busy cores, between 0 and one per process, in: $out"
"$sim" --profile "$profiles/mlp.yaml" | grep -q "waits:" && fail "waits line without --waits"
"$sim" --profile "$profiles/mlp.yaml" --mode fifo --bandwidth 125MB/s --chunk-bytes 512KiB \
  --credit-bytes 1000000 >/dev/null || fail "single mode run exited $?"
"$sim" --profile "$profiles/mlp.yaml" --mode fifo --host-cores 2 >/dev/null ||
  fail "--host-cores 2 exited $?"
"$sim" --profile "$profiles/mlp.yaml" --grouping auto --host-cores 2 --job-host-cores 2 \
  >/dev/null || fail "--job-host-cores 2 exited $?"

# A large cluster through --simulated-workers: 16 workers standing for 20000, said in the header,
# and no slower to simulate than 16 (the full cluster would take minutes); never below the full
# simulation of a cluster small enough to check (the reduced one is pessimistic).
out=$("$sim" --profile "$profiles/resnet50.yaml" --workers 20000 --servers 8 \
  --simulated-workers 16) || fail "--simulated-workers exited $?"
grep -q "20000 workers (simulated as 16, each standing for 1250)" <<<"$out" ||
  fail "--simulated-workers: no note in the header: $out"
full=$("$sim" --profile "$profiles/resnet50.yaml" --workers 64 --servers 8 |
  awk '$1 == "preemptive" {print $2}')
reduced=$("$sim" --profile "$profiles/resnet50.yaml" --workers 64 --servers 8 \
  --simulated-workers 16 | awk '$1 == "preemptive" {print $2}')
awk -v f="$full" -v r="$reduced" 'BEGIN {exit !(f > 0 && r >= f)}' ||
  fail "--simulated-workers 16 of 64: $reduced ms, the full cluster $full ms"
# At most as many as there are: the same figure as without the flag.
same=$("$sim" --profile "$profiles/resnet50.yaml" --workers 8 --servers 2 --simulated-workers 16 |
  awk '$1 == "preemptive" {print $2}')
plain=$("$sim" --profile "$profiles/resnet50.yaml" --workers 8 --servers 2 |
  awk '$1 == "preemptive" {print $2}')
[ "$same" = "$plain" ] || fail "--simulated-workers above --workers changed $plain to $same"

expect_2() {
  local err rc
  err=$("$sim" "$@" 2>&1 >/dev/null)
  rc=$?
  [ "$rc" -eq 2 ] || fail "exit $rc (want 2) for: $*"
  [ "$(wc -l <<<"$err")" -eq 1 ] || fail "want one line on stderr for: $*; got: $err"
  grep -q "psrt-sim" <<<"$err" || fail "message does not name psrt-sim: $err"
}
p="$profiles/mlp.yaml"
expect_2 --profile "$p" --bandwidth fast
expect_2 --profile "$p" --bandwidth 1G
expect_2 --profile "$p" --chunk-bytes 4XB
expect_2 --profile "$p" --credit-bytes 0
# VGG-16 in 16-byte chunks is 34 million chunks: refused at once, not simulated for minutes.
expect_2 --profile "$profiles/vgg16.yaml" --chunk-bytes 16
expect_2 --profile "$p" --mode lifo
expect_2 --profile "$p" --workers 0
expect_2 --profile "$p" --iterations 1
expect_2 --profile "$p" --host-cores 5000
expect_2 --profile "$p" --host-cores -1
expect_2 --profile "$p" --job-host-cores 5000
expect_2 --profile "$p" --simulated-workers -1
expect_2 --profile "$p" --no-such-flag
expect_2 --profile /nonexistent/profile.yaml
expect_2 --bandwidth 1Gbit
echo "psrt-sim CLI: ok"
