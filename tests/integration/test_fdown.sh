#!/usr/bin/env bash
# The tracer's own descriptor (the trace file's) against a program that
# treats every descriptor as its own (tracer/tests/fdown.c: closes 3..1023
# one by one, close_range, closefrom, dup2 over every descriptor it did not
# make, a daemon's double fork closing 0..1023): traced, the program gets
# the descriptor numbers it gets untraced, its data file holds its 6 bytes
# and nothing of the trace, and the trace is whole, with the calls made
# after the closing.
# usage: test_fdown.sh MODE NCCLRR FDOWN
set -uo pipefail
mode=$1
ncclrr=$(realpath "$2")
fdown=$(realpath "$3")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
. "$(dirname "${BASH_SOURCE[0]}")/../lib/skip_asan_tracer.sh"
skip_asan_tracer "$(dirname "$fdown")/../libncclrr-trace.so"

mkdir "$tmp/u" "$tmp/r"
"$fdown" "$mode" "$tmp/u" || fail "untraced: exit $?"
"$ncclrr" record -q -o "$tmp/t" -- "$fdown" "$mode" "$tmp/r" >"$tmp/out" 2>&1 || { fail "traced: exit $?"; cat "$tmp/out"; }
echo "untraced: $(tr '\n' ' ' <"$tmp/u/fds")"
echo "traced:   $(tr '\n' ' ' <"$tmp/r/fds" 2>/dev/null)"
cmp -s "$tmp/u/fds" "$tmp/r/fds" || fail "the traced program got other descriptor numbers than untraced"
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
[ $fails -eq 0 ] && echo "PASS: fdown $mode"
exit $((fails > 0))
