#!/bin/bash
# emunet.sh for real: two shaped hosts, a TCP transfer between them at about the shaped rate, a
# failing command whose status comes back, and nothing left behind either time; first, a rate of
# zero refused with one line, exit 2.
# Skips (exit 77) where it cannot run: not root, or no network namespaces / tc.
set -u
emunet=$1
prefix=emt$$
fail() { echo "FAIL: $*" >&2; "$emunet" down --prefix "$prefix" >/dev/null 2>&1; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }

# A rate of zero: refused before anything is made (tbf rejects it, and every link was left
# unshaped while "up" said the hosts were up at 0mbit), as root or not.
for cmd in "up --hosts 2" "run --hosts 2"; do
  for r in 0mbit 000gbit 0bit; do
    err=$("$emunet" $cmd --rate $r --prefix "$prefix" -- true 2>&1 >/dev/null)
    rc=$?
    [ "$rc" -eq 2 ] && [ "$(wc -l <<<"$err")" -eq 1 ] && grep -q "above zero" <<<"$err" ||
      fail "$cmd --rate $r: exit $rc, want 2 and one line: $err"
  done
done
[ -z "$(ip netns list 2>/dev/null | grep "^$prefix-")" ] || fail "namespaces made for rate 0"

[ "$(id -u)" -eq 0 ] || skip "not root"
command -v ip >/dev/null && command -v tc >/dev/null || skip "ip or tc missing"
ip netns add "$prefix-probe" 2>/dev/null || skip "cannot create network namespaces"
ip netns del "$prefix-probe"

leftovers() {
  { ip netns list | awk '{print $1}' | grep "^$prefix-"; ip -o link | grep -E "$prefix|10\.77\."; } || true
}

out=$("$emunet" run --hosts 2 --rate 100mbit --prefix "$prefix" -- \
      "$emunet" measure --prefix "$prefix" --bytes 2500000 0 1 2>&1) || fail "run exited $?: $out"
echo "$out"
mbit=$(sed -n 's/.*: \([0-9.]*\) Mbit\/s$/\1/p' <<<"$out")
[ -n "$mbit" ] || fail "no measurement in: $out"
awk -v m="$mbit" 'BEGIN { exit !(m > 50 && m < 105) }' || fail "$mbit Mbit/s is not about 100"
[ -z "$(leftovers)" ] || fail "left behind: $(leftovers)"

"$emunet" run --hosts 2 --rate 100mbit --prefix "$prefix" -- bash -c 'exit 7' >/dev/null 2>&1
rc=$?
[ "$rc" -eq 7 ] || fail "a failing command's status came back as $rc, want 7"
[ -z "$(leftovers)" ] || fail "left behind after a failure: $(leftovers)"
echo "emunet: ok"
