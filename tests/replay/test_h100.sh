#!/usr/bin/env bash
# The traces recorded on a real H100 outside `ncclrr run` (traces/h100/,
# made by tests/device/run.sh): PyTorch's TCPStore on a dual-stack IPv6
# socket, NCCL 2.28.9 nobody relinked.  Replay answers their CUDA calls
# from the trace (no cluster file), so no NCCL runs here.
# usage: test_h100.sh CASE NCCLRR SOURCE_ROOT
# CASE: golden | repeat20:TRACE | repeat100:TRACE | analyze
set -uo pipefail
case_=$1
ncclrr=$(realpath "$2")
root=$(realpath "$3")
. "$(dirname "${BASH_SOURCE[0]}")/../lib/check.sh"
has() { grep -qF -- "$2" "$1" || fail "$3: no '$2' in: $(head -c 3000 "$1")"; }
unset NCCLRR_FAULT NCCL_DEBUG
# the paths the output names are relative to the source root, as in the
# expected files
cd "$root" || exit 2
g=traces/h100
replay() { "$ncclrr" replay --timeout 60 "$@"; }
# both ranks fail where they failed, and nowhere else
fail_r1="rank 1: ncclCommInitRankConfig = ncclInvalidUsage (5) (#647"
fail_r0="rank 0: ncclCommInitRankConfig = ncclInvalidUsage (5) (#677"

case $case_ in
golden)
	for t in torch_ok torch_dup_gpu; do
		replay "$g/$t" >"$tmp/$t.out" 2>&1
		rc=$?
		[ $rc -eq 0 ] || fail "$t: exit $rc: $(grep -E 'hung|divergence|diverged' "$tmp/$t.out" | head -3)"
		"$root/traces/replay/normalize.sh" <"$tmp/$t.out" | grep -v '^ncclrr replay: warning: .*no index at the end' >"$tmp/$t.norm"
		diff -u "$g/$t.expected" "$tmp/$t.norm" || fail "$t: output differs from $t.expected"
	done
	has "$tmp/torch_ok.out" "recorded run: no failure" torch_ok
	has "$tmp/torch_ok.out" "result: the replay matches the recording" torch_ok
	has "$tmp/torch_dup_gpu.out" "result: the replay matches the recording: failure reproduced" torch_dup_gpu
	grep -A2 '^reproduced failure:' "$tmp/torch_dup_gpu.out" >"$tmp/rep"
	has "$tmp/rep" "$fail_r1" torch_dup_gpu
	has "$tmp/rep" "$fail_r0" torch_dup_gpu
	;;
repeat20:* | repeat100:*)
	n=${case_%%:*} t=${case_#*:}
	n=${n#repeat}
	replay --repeat "$n" "$g/$t" >"$tmp/r" 2>&1
	rc=$?
	[ $rc -eq 0 ] || fail "$t: --repeat $n exit $rc: $(grep -E 'replay [0-9]|differs|hung|divergence' "$tmp/r" | head -5)"
	if [ "$t" = torch_ok ]; then
		has "$tmp/r" "$n of $n replays matched the recording, $n of $n identical to the first" "$t"
	else
		has "$tmp/r" "$n of $n replays reproduced the failure, $n of $n identical to the first" "$t"
	fi
	;;
analyze)
	# hang: no hang; each rank's first failure is NCCL's init
	"$ncclrr" hang "$g/torch_dup_gpu" >"$tmp/h" 2>&1
	[ $? -eq 0 ] || fail "hang torch_dup_gpu: want exit 0 (no hang)"
	has "$tmp/h" "No hang: no traced process waits at the end of its trace." hang
	has "$tmp/h" "First abnormal end: rank 1 ended (exit 1)" hang
	has "$tmp/h" "its first failure was ncclCommInitRankConfig(" hang
	grep 'its first failure was' "$tmp/h" | grep -qF ') = ncclInvalidUsage (5)' || fail "hang: first failure is not ncclInvalidUsage: $(grep 'first failure' "$tmp/h")"
	"$ncclrr" hang "$g/torch_ok" >"$tmp/ho" 2>&1
	[ $? -eq 0 ] || fail "hang torch_ok: want exit 0"
	grep -q 'First abnormal end' "$tmp/ho" && fail "hang torch_ok names an abnormal end: $(grep 'First abnormal' "$tmp/ho")"
	# diff: the one rank of torch_ok is paired with rank 0; rank 1 only in
	# B; the headline is rank 0's failed init, and no divergence is an
	# argument the call never reads (fcntl F_GETFL's register garbage)
	"$ncclrr" diff "$g/torch_ok" "$g/torch_dup_gpu" >"$tmp/d" 2>&1
	rc=$?
	[ $rc -eq 1 ] || fail "diff: exit $rc, want 1"
	has "$tmp/d" "Earliest across ranks: rank 0 thread 1, failure only in B: ncclCommInitRankConfig = ncclInvalidUsage (5)" diff
	has "$tmp/d" "rank 1: only in B (traces/h100/torch_dup_gpu/vm-1999.nrt)" diff
	has "$tmp/d" "nranks (every rank): A '1', B '2'" diff
	grep -q 'fcntl64 (arg differs)' "$tmp/d" && fail "diff: fcntl64's unused arg compared: $(grep 'arg differs' "$tmp/d")"
	;;
*) echo "unknown case $case_"; exit 2 ;;
esac
[ $fails -eq 0 ] && echo "PASS: h100 $case_" || echo "$fails failure(s)"
[ $fails -eq 0 ]
