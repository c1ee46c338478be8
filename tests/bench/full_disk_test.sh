#!/bin/bash
# psrt-place, psrt-timeline merge, psrt-bench-placement and psrt-bench-transport --calibrate when
# their output cannot be written (a full disk; /dev/full): one line on stderr naming the file and
# the system's reason, a non-zero exit, no partial file, and an earlier good file at that path
# kept. Before, psrt-place said "plan written" (exit 0, an empty plan), the merge reported its
# events written (exit 0, a truncated trace in place of the earlier one), psrt-bench-placement
# left four empty files without a word (exit 0) and --calibrate said "wrote" (0 bytes). A full
# disk is a file size limit here (ulimit -f 0: every write fails, for root too). Also the merge
# of a part file that a crash left with a gigabyte of NUL bytes (it held the line whole: 2 GB).
# Usage: full_disk_test.sh BIN_DIR SOURCE_DIR
set -u
bin=$1
src=$2
fails=0
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# The command under the limit; its stderr through a pipe (a file would be limited too).
full=(bash -c '{ (trap "" XFSZ && ulimit -f 0 && exec "$@") 2>&1 1>&3 3>&- | cat >&2
  exit "${PIPESTATUS[0]}"; } 3>&1' full)
say() {  # WHAT OK
  if [ "$2" -eq 0 ]; then echo "ok   $1"; else
    echo "FAIL $1: exit $rc, stdout: ${out:0:300} stderr: ${err:0:300}"
    fails=$((fails + 1))
  fi
}
run() {  # ARGV...: sets rc, out, err
  out=$(timeout 120 "$@" 2>"$dir/err")
  rc=$?
  err=$(<"$dir/err")
}
refused() {  # WHAT WANT_RC WANT_IN_STDERR NOT_IN_STDOUT FILE KEPT ("": no FILE; -: a device)
  local ok=0
  [ "$rc" -eq "$2" ] && [ "$(wc -l <<<"$err")" -eq 1 ] && grep -qF -- "$3" <<<"$err" &&
    ! grep -qF -- "$4" <<<"$out" || ok=1
  if [ -z "$6" ]; then [ ! -e "$5" ] || ok=1; elif [ "$6" != - ]; then cmp -s "$5" "$6" || ok=1; fi
  ls "$5".tmp* >/dev/null 2>&1 && ok=1
  say "$1" $ok
}

# psrt-place: the plan (--out) and the profile (--write-profile).
printf 'devices: [{name: a, memory_gib: 4, gflops: 100}, {name: b, memory_gib: 4, gflops: 100}]
batch_size: 8\n' >"$dir/devices.yaml"
place=("$bin/psrt-place" --profile "$src/bench/profiles/lenet5.yaml" --devices "$dir/devices.yaml")
run "${place[@]}" --out "$dir/plan.yaml"
say "psrt-place --out: written" $([ "$rc" -eq 0 ] && [ -s "$dir/plan.yaml" ]; echo $?)
cp "$dir/plan.yaml" "$dir/plan.good"
run "${full[@]}" "${place[@]}" --out "$dir/plan.yaml"
refused "psrt-place --out on a full disk: exit 1, the earlier plan kept" 1 \
  "$dir/plan.yaml: write: File too large" "plan written" "$dir/plan.yaml" "$dir/plan.good"
run "${place[@]}" --out /dev/full
refused "psrt-place --out /dev/full: exit 1" 1 "/dev/full: write: No space left on device" \
  "plan written" /dev/full -
# A device is streamed to (whole-or-nothing writes refused it, and --out's check refused /dev
# to a user who cannot write there).
run "${place[@]}" --out /dev/stdout
say "psrt-place --out /dev/stdout: the plan on stdout" \
  $([ "$rc" -eq 0 ] && grep -q "^placer: " <<<"$out"; echo $?)
run "${full[@]}" "$bin/psrt-place" --arch mlp --batch 8 --write-profile "$dir/profile.yaml"
refused "psrt-place --write-profile on a full disk: exit 1, no file" 1 \
  "$dir/profile.yaml: write: File too large" "written" "$dir/profile.yaml" ""

# psrt-timeline merge: a trace of 2,000 events, merged once, then again on a full disk.
mkdir "$dir/tl"
{
  echo '{"displayTimeUnit":"ms","traceEvents":['
  echo '{"ph":"M","name":"process_name","pid":1,"args":{"name":"worker 0"}},'
  for i in $(seq 2000); do
    echo "{\"ph\":\"X\",\"name\":\"push\",\"pid\":1,\"tid\":1,\"ts\":$i,\"dur\":1},"
  done
  echo '{"ph":"M","name":"process_sort_index","pid":1,"args":{"sort_index":1}}'
  echo ']}'
} >"$dir/tl/worker-0.json"
run "$bin/psrt-timeline" merge "$dir/tl" -o "$dir/run.json"
say "merge: written" $([ "$rc" -eq 0 ] && [ -s "$dir/run.json" ]; echo $?)
cp "$dir/run.json" "$dir/run.good"
run "${full[@]}" "$bin/psrt-timeline" merge "$dir/tl" -o "$dir/run.json"
refused "merge -o on a full disk: exit 2, the earlier merge kept" 2 \
  "$dir/run.json: write: File too large" "events from" "$dir/run.json" "$dir/run.good"
run "$bin/psrt-timeline" merge "$dir/tl" -o /dev/full
refused "merge -o /dev/full: exit 2" 2 "/dev/full: write: No space left on device" \
  "events from" /dev/full -
# -o /dev/stdout appended to a log (>>): the whole-or-nothing write replaced the log it led to.
echo "an earlier line" >"$dir/all.log"
"$bin/psrt-timeline" merge "$dir/tl" -o /dev/stdout >>"$dir/all.log" 2>/dev/null
say "merge -o /dev/stdout >> log: the log kept, the trace after it" \
  $([ "$(head -1 "$dir/all.log")" = "an earlier line" ] &&
    grep -qF '"traceEvents"' "$dir/all.log"; echo $?)
# A killed process's part file: a line that is no event, then 1 GiB of NUL bytes (sparse), read
# under a 700 MB address space limit; the merge goes on without them and says so, in one line.
{
  echo '{"displayTimeUnit":"ms","traceEvents":['
  echo '{"ph":"M","name":"process_name","pid":2,"args":{"name":"worker 1"}},'
  echo 'garbage'
  echo '{"ph":"X","name":"push","pid":2,"tid":1,"ts":1,"dur":1},'
} >"$dir/tl/worker-1.json.part"
truncate -s +1G "$dir/tl/worker-1.json.part"
out=$( (ulimit -v 700000 && exec timeout 120 "$bin/psrt-timeline" merge "$dir/tl" \
  -o "$dir/crash.json") 2>"$dir/err")
rc=$?
err=$(grep -F "skipped" "$dir/err")
ok=1
[ "$rc" -eq 0 ] && [ "$(wc -l <<<"$err")" -eq 1 ] &&
  grep -qF "worker-1.json.part: skipped 1 line(s) over 1 MiB" <<<"$err" &&
  grep -qF "1 line(s) that are not events" <<<"$err" && grep -qF "2004 events" <<<"$out" &&
  /usr/bin/python3 -m json.tool "$dir/crash.json" >/dev/null && ok=0
say "merge of a part file ending in 1 GiB of NUL bytes: skipped and said, in bounded memory" $ok
rm -f "$dir/tl/worker-1.json.part"

# psrt-bench-placement --out DIR.
run "${full[@]}" "$bin/psrt-bench-placement" --smoke --out "$dir/bp"
refused "psrt-bench-placement on a full disk: exit 1" 1 \
  "$dir/bp/placement.csv: write: File too large" "MET" "$dir/bp/placement.csv" ""
say "psrt-bench-placement: no file left" $([ -d "$dir/bp" ] && [ -z "$(ls -A "$dir/bp")" ]; echo $?)
# psrt-bench-transport --calibrate FILE: a device that refuses every write (a file-size limit
# would stop the bench's own job file first); "wrote /dev/full" was said, exit 0.
run "$bin/psrt-bench-transport" --smoke --calibrate /dev/full
refused "psrt-bench-transport --calibrate /dev/full: exit 1" 1 "/dev/full" "wrote" /dev/full -
echo "$fails failure(s)"
[ "$fails" -eq 0 ]
