#!/usr/bin/env bash
# Every command that reads traces, on traces that claim N streams (threads)
# or N metadata keys (issue 20): each finishes within 4 GiB of address
# space, says what it refuses, and never dies of a signal. Times are
# printed; the linear-time proof is the unit test many_streams.
# usage: test_scale.sh NCCLRR MANY_STREAMS N
set -uo pipefail
ncclrr=$(realpath "$1"); gen=$(realpath "$2"); n=$3
. "$(dirname "${BASH_SOURCE[0]}")/../lib/check.sh"

# the three kinds (tests/unit/many_streams.c): N real streams of one call
# each, an index naming one chunk under N streams, N environment keys
for k in real lie meta; do
	mkdir -p "$tmp/$k"
	"$gen" "$tmp/$k/t.nrt" "$n" "$k" >/dev/null || fail "many_streams $k $n"
done
echo "files: $(du -b "$tmp"/*/t.nrt | awk '{ printf "%s %d bytes; ", $2, $1 }')"

# run NAME WANT_RC CMD...: under ulimit -v 4 GiB and a 10 min timeout
run() {
	local name=$1 want=$2 rc t0; shift 2
	t0=$(date +%s.%N)
	(ulimit -v 4194304; exec timeout 600 "$@") >"$tmp/out" 2>"$tmp/err"
	rc=$?
	printf '%-40s exit %d in %.1f s\n' "$name" "$rc" "$(echo "$(date +%s.%N) - $t0" | bc)"
	[ "$rc" -lt 124 ] || fail "$name: exit $rc (timeout or signal): $(tail -c 300 "$tmp/err")"
	[ "$rc" -eq "$want" ] || fail "$name: exit $rc, want $want: $(tail -c 300 "$tmp/err")"
	grep -qiE 'cannot allocate|out of memory' "$tmp/err" && fail "$name: out of memory: $(tail -c 300 "$tmp/err")"
	return 0
}

for k in real lie meta; do
	f=$tmp/$k/t.nrt
	run "stats $k" 0 "$ncclrr" stats "$f"
	[ $k = lie ] && { grep -q "the index at offset [0-9]* does not fit this file" "$tmp/err" ||
		fail "stats of a lying index does not say the index was refused: $(head -c 300 "$tmp/err")"; }
	want=$([ $k = lie ] && echo 1 || echo "$n")
	[ $k = meta ] && want=1
	grep -q "^rank 0 (.* $want threads): $want calls" "$tmp/out" ||
		fail "stats $k: want $want threads of one call each: $(head -1 "$tmp/out")"
	run "dump $k" 0 "$ncclrr" dump --api none "$f"
	run "hang $k" 0 "$ncclrr" hang "$f"
	run "export --chrome $k" 0 "$ncclrr" export --chrome "$tmp/o.json" "$f"
	run "export --html $k" 0 "$ncclrr" export --html "$tmp/o.html" "$f"
	run "diff $k" 0 "$ncclrr" diff "$f" "$f"
done
# replay and rerun run a thread per recorded thread: more than 4096 are
# refused, naming the file
run "replay real" 2 "$ncclrr" replay "$tmp/real"
grep -q "t.nrt has $n threads; replay runs at most 4096 threads a process" "$tmp/err" ||
	fail "replay: no thread limit message: $(head -c 300 "$tmp/err")"
run "replay --rerun real" 2 "$ncclrr" replay --rerun "$tmp/real" -- /bin/true
grep -q "t.nrt has $n threads; replay runs at most 4096 threads a process" "$tmp/err" ||
	fail "rerun: no thread limit message: $(head -c 300 "$tmp/err")"

[ $fails -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "PASS scale $n"
