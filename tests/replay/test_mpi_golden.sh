#!/usr/bin/env bash
# The golden traces of jobs started by mpirun (traces/mpi/, README there):
# each replays to its expected output, and 20 of 20 replays reproduce it.
# usage: test_mpi_golden.sh golden|repeat20 NCCLRR SOURCE_ROOT
# Needs no NCCL and no mpirun: the traces are enough.
set -uo pipefail
case_=$1
ncclrr=$(realpath "$2")
root=$3
g=$root/traces/mpi
. "$(dirname "${BASH_SOURCE[0]}")/../lib/check.sh"
unset NCCLRR_FAULT NCCL_DEBUG
# (no --topo: each trace directory keeps its cluster, ncclrr-cluster.xml)
replay() { "$ncclrr" replay --timeout 60 "$@"; }
for d in "$g"/*/; do
	t=$(basename "$d")
	case $case_ in
	golden)
		replay "$g/$t" >"$tmp/$t.out" 2>&1 || fail "$t: exit $?"
		"$root/traces/replay/normalize.sh" <"$tmp/$t.out" >"$tmp/$t.norm"
		diff -u "$g/$t.expected" "$tmp/$t.norm" || fail "$t: output differs from $t.expected"
		;;
	repeat20)
		replay --repeat 20 "$g/$t" >"$tmp/$t.rep" 2>&1 || fail "$t: --repeat 20 exit $?"
		grep -q '^repeat: 20 of 20 replays reproduced the failure, 20 of 20 identical to the first' "$tmp/$t.rep" ||
			fail "$t: $(grep -E '^(repeat|replay [0-9]+/20: d|  differs)' "$tmp/$t.rep" | head -6)"
		;;
	*) echo "unknown case $case_"; exit 2 ;;
	esac
done
[ $fails -eq 0 ] && echo "PASS: mpi golden $case_"
exit $((fails > 0))
