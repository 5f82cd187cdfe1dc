#!/usr/bin/env bash
# `ncclrr replay` of a dual-stack listener (dualstack.c, what PyTorch's
# TCPStore does): an IPv6 client to [::ffff:127.0.0.1] and an IPv4 client
# to 127.0.0.1 meet the [::] listener live, not served from the trace.
# usage: test_dualstack.sh NCCLRR DUALSTACK
set -uo pipefail
ncclrr=$(realpath "$1")
prog=$(realpath "$2")
. "$(dirname "${BASH_SOURCE[0]}")/../lib/check.sh"
"$ncclrr" record -q -o "$tmp/t" -- "$prog" >"$tmp/out" 2>&1 || { cat "$tmp/out"; fail "dualstack exited $?"; }
grep -qx 'dualstack: ok' "$tmp/out" || fail "the recorded run did not exchange: $(cat "$tmp/out")"
"$ncclrr" dump "$tmp/t" >"$tmp/d" 2>&1
grep -qF 'addr=[::ffff:127.0.0.1]:' "$tmp/d" || fail "no v4-mapped connect recorded"
grep -Eq 'bind\(.*addr=\[::\]:0' "$tmp/d" || fail "no [::] bind recorded"
for n in 1 2; do
	"$ncclrr" replay -v --repeat 3 --timeout 20 "$tmp/t" >"$tmp/r" 2>&1
	rc=$?
	[ $rc -eq 0 ] || fail "replay exit $rc: $(tail -5 "$tmp/r")"
done
grep -q '^result: the replay matches the recording$' "$tmp/r" || fail "replay did not match: $(tail -5 "$tmp/r")"
grep -q '3 of 3 replays matched the recording, 3 of 3 identical' "$tmp/r" || fail "not 3 of 3: $(grep repeat "$tmp/r")"
# every socket call ran: nothing answered from the trace
grep -qE '[0-9]+ of [0-9]+ calls, 0 answered from the trace' "$tmp/r" || fail "socket calls served from the trace: $(grep -E 'answered from the trace' "$tmp/r" | head -3)"
[ $fails -eq 0 ] || { cat "$tmp/r"; exit 1; }
echo "dualstack: replayed live, 3 of 3"
