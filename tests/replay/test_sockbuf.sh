#!/usr/bin/env bash
# A replay needs none of the socket buffer room the recording's kernel had
# (rsock.c send_buffered): sockbuf.c's two processes each send megabytes
# the other never reads, recorded with this machine's buffers, replayed in
# a network namespace whose TCP buffers stop at 64 KB (the machine's are
# untouched): what does not fit waits in each worker's pump, and each
# worker, at its end, reads and drops what the other still sends it, so
# that neither waits for the other for ever.  Skips (77) without
# `unshare -n` (root).
# usage: test_sockbuf.sh NCCLRR SOCKBUF
set -uo pipefail
ncclrr=$(realpath "$1")
prog=$(realpath "$2")
. "$(dirname "${BASH_SOURCE[0]}")/../lib/check.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/smallbuf.sh"
"$ncclrr" record -q -o "$tmp/t" -- "$prog" >"$tmp/out" 2>&1 || { cat "$tmp/out"; fail "sockbuf exited $?"; }
[ "$(grep -c '^sockbuf: sent [0-9]*$' "$tmp/out")" -eq 2 ] || fail "the recorded run did not send from both ends: $(cat "$tmp/out")"
# each send took more than the replay's buffers hold
"$ncclrr" dump --api send "$tmp/t" >"$tmp/d" 2>&1
big=$(grep -cE 'send\(.*len=8388608, .*\) = [0-9]{6,} ' "$tmp/d")
[ "$big" -eq 2 ] || fail "want 2 sends of at least 100 KB recorded, got $big: $(cat "$tmp/d")"
small_buffers "$ncclrr" replay --repeat 3 --timeout 20 "$tmp/t" >"$tmp/r" 2>&1
rc=$?
[ $rc -eq 0 ] || fail "replay with 64 KB buffers: exit $rc: $(grep -E 'hung|differs|diverge|^repeat' "$tmp/r" | head -5)"
grep -q '3 of 3 replays matched the recording, 3 of 3 identical' "$tmp/r" || fail "not 3 of 3: $(tail -5 "$tmp/r")"
[ $fails -eq 0 ] || { cat "$tmp/r"; exit 1; }
echo "sockbuf: replayed with 64 KB socket buffers, 3 of 3"
