#!/usr/bin/env bash
# The tracer's own descriptor (the trace file's) against a program that
# treats every descriptor as its own (tracer/tests/fdown.c: closes 3..1023
# one by one, close_range, closefrom, dup2 over every descriptor it did not
# make, a daemon's double fork closing 0..1023): traced, the program gets
# the descriptor numbers it gets untraced, its data file holds its 6 bytes
# and nothing of the trace, and the trace is whole, with the calls made
# after the closing.
#
# With BACKEND lttng (`record --backend lttng`), lttng-ust's own
# descriptors are the ones at stake: closed by the program, lttng-ust
# aborted at exit (all five modes). liblttng-ust-fd, which record preloads,
# and the tracer's close_range/closefrom keep them; the program's numbers
# then start above lttng-ust's (opened before main), so they are not
# compared.
# usage: test_fdown.sh MODE NCCLRR FDOWN [BACKEND]
set -uo pipefail
mode=$1
ncclrr=$(realpath "$2")
fdown=$(realpath "$3")
backend=${4:-native}
. "$(dirname "${BASH_SOURCE[0]}")/../lib/check.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/skip_asan_tracer.sh"
skip_asan_tracer "$(dirname "$fdown")/../libncclrr-trace.so"
if [ "$backend" = lttng ]; then
	command -v lttng-sessiond >/dev/null || { echo "SKIP: lttng-tools not installed"; exit 77; }
	started=
	if ! lttng list >/dev/null 2>&1; then
		lttng-sessiond --daemonize --no-kernel >/dev/null 2>&1 || { echo "FAIL: cannot start lttng-sessiond"; exit 1; }
		started=1
	fi
	trap '[ -n "$started" ] && pkill -x lttng-sessiond; rm -rf "$tmp"' EXIT
fi

mkdir "$tmp/u" "$tmp/r"
"$fdown" "$mode" "$tmp/u" || fail "untraced: exit $?"
"$ncclrr" record -q --backend "$backend" -o "$tmp/t" -- "$fdown" "$mode" "$tmp/r" >"$tmp/out" 2>&1 || { fail "traced: exit $?"; cat "$tmp/out"; }
echo "untraced: $(tr '\n' ' ' <"$tmp/u/fds")"
echo "traced:   $(tr '\n' ' ' <"$tmp/r/fds" 2>/dev/null)"
[ "$backend" = lttng ] || cmp -s "$tmp/u/fds" "$tmp/r/fds" || fail "the traced program got other descriptor numbers than untraced"
[ "$(cat "$tmp/r/data.txt" 2>/dev/null)" = hello ] && [ "$(stat -c %s "$tmp/r/data.txt")" = 6 ] ||
	fail "the program's data file holds $(stat -c %s "$tmp/r/data.txt" 2>/dev/null) bytes, not its 6"
grep -q 'Cannot write trace' "$tmp/out" && fail "the trace was lost: $(grep 'Cannot write' "$tmp/out")"
"$ncclrr" dump "$tmp/t" >"$tmp/d" 2>"$tmp/e" || { fail "dump failed"; cat "$tmp/e"; }
[ -s "$tmp/e" ] && { fail "dump warned (a trace not completed)"; cat "$tmp/e"; }
# both sockets, the one made after the closing too, and its close
n=$(grep -c ' socket(domain=AF_INET' "$tmp/d")
[ "$n" = 2 ] || fail "$n socket calls recorded, not 2"
s2=$(sed -n 's/^socket //p' "$tmp/r/fds" | tail -1)
grep -q " close(fd=fd:$s2) = 0" "$tmp/d" || fail "the close of the second socket (fd $s2) was not recorded"
[ $fails -eq 0 ] && echo "PASS: fdown $mode ($backend)"
exit $((fails > 0))
