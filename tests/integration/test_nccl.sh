#!/usr/bin/env bash
# Real NCCL on the fake runtime under `ncclrr run` (suite nccl / slow).
# usage: test_nccl.sh CASE NCCLRR SOURCE_ROOT WORKLOAD_DIR [NCCL_HINT] [RUNS]
# CASE: cumem | ipc | shm | nonblocking | tp_dp | fault
set -uo pipefail
case_=$1
ncclrr=$(realpath "$2")
root=$3
wl=$(realpath "$4")
NCCL_HINT=${5:-}
runs=${6:-3}
here=$(dirname "$(realpath "$0")")
. "$here/nccl_common.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
echo "NCCL: $NCCL"

# run TOPO TIMEOUT LOG ARGS... -> exit status of ncclrr run; prints wall time
run() {
	local topo=$1 to=$2 log=$3; shift 3
	local t0=$(date +%s.%N)
	NCCL_DEBUG=INFO "$ncclrr" run --topo "$root/topo/$topo" --timeout "$to" "$@" >"$log" 2>&1
	local rc=$?
	echo "wall: $(echo "$(date +%s.%N) - $t0" | bc) s ($topo ${*})"
	return $rc
}
count() { grep -c -- "$1" "$2" || true; }
show_tail() { echo "---- last lines of $1"; tail -n 40 "$1"; echo "----"; }

# 8 ranks on 1node_8gpu, each reaching Init COMPLETE, channels via $1
one_node() { # pattern label [extra ncclrr-run args]
	local pat=$1 label=$2; shift 2
	local log=$tmp/$label.log
	run 1node_8gpu.xml 240 "$log" "$@" -- "$wl/init_allreduce"
	local rc=$?
	[ $rc -eq 0 ] || { fail "$label: ncclrr run exited $rc"; show_tail "$log"; }
	local n; n=$(grep -- '- Init COMPLETE' "$log" | sed -n 's/^\[\([0-9]*\)\].*/\1/p' | sort -u | wc -l)
	[ "$n" -eq 8 ] || fail "$label: $n of 8 ranks reached Init COMPLETE"
	n=$(count "via $pat" "$log")
	[ "$n" -gt 0 ] || { fail "$label: no channel 'via $pat'"; grep -m5 ' via ' "$log"; }
	echo "$label: $(count '- Init COMPLETE' "$log") Init COMPLETE, $n channels via $pat"
	grep -m1 -- "via $pat" "$log"
	n=$(count ': allreduce ok' "$log")
	[ "$n" -eq 8 ] || fail "$label: $n of 8 ranks finished the AllReduce"
}

case $case_ in
cumem) one_node "P2P/CUMEM" cumem ;;
ipc) one_node "P2P/IPC" ipc --env NCCL_CUMEM_ENABLE=0 ;;
shm) one_node "SHM/" shm --env NCCL_P2P_DISABLE=1 ;;
nonblocking)
	log=$tmp/nb.log
	run 1node_8gpu.xml 240 "$log" -- "$wl/init_allreduce" --nonblocking
	rc=$?
	[ $rc -eq 0 ] || { fail "nonblocking: exit $rc"; show_tail "$log"; }
	n=$(count ': init ok' "$log"); [ "$n" -eq 8 ] || fail "nonblocking: $n of 8 init ok"
	;;
tp_dp)
	log=$tmp/tp_dp.log
	run 2node_16gpu.xml 290 "$log" -- "$wl/tp_dp" ${TP_DP_ARGS:-}
	rc=$?
	[ $rc -eq 0 ] || { fail "tp_dp: ncclrr run exited $rc"; show_tail "$log"; }
	for r in $(seq 0 15); do
		n=$(grep -c "^\[$r\] .*- Init COMPLETE" "$log")
		[ "$n" -eq 3 ] || fail "tp_dp: rank $r has $n Init COMPLETE (want 3: global, tp, dp)"
	done
	n=$(grep -c -- 'splitCount .* color .* - Init COMPLETE' "$log"); [ "$n" -eq 32 ] || fail "tp_dp: $n split Init COMPLETE (want 32)"
	n=$(count 'via P2P/' "$log"); [ "$n" -gt 0 ] || fail "tp_dp: no P2P channel"
	n=$(count 'via NET/Socket' "$log"); [ "$n" -gt 0 ] || fail "tp_dp: no NET/Socket channel"
	# a NET/Socket channel must join ranks on different hosts (DP), P2P ones the same host (TP)
	if grep -q 'via NET/Socket' "$log"; then
		grep -m1 'via NET/Socket' "$log"
		grep -m1 'via P2P/' "$log"
	fi
	n=$(count ': done' "$log"); [ "$n" -eq 16 ] || fail "tp_dp: $n of 16 ranks done"
	echo "tp_dp: $(count '- Init COMPLETE' "$log") Init COMPLETE, $(count 'via P2P/' "$log") P2P and $(count 'via NET/Socket' "$log") NET/Socket channel lines"
	;;
fault)
	# cuMemImportFromShareableHandle fails on rank 3 (first call): NCCL must
	# report the connect failure for rank 3 and the job must end in time.
	# the other ranks may wait for rank 3 until the timeout: keep it short
	fto=${NCCLRR_TEST_FAULT_TIMEOUT:-80}
	for i in $(seq 1 "$runs"); do
		log=$tmp/fault$i.log
		t0=$(date +%s)
		run 1node_8gpu.xml "$fto" "$log" \
			--env NCCLRR_FAULT=cuMemImportFromShareableHandle:rank=3:nth=1:CUDA_ERROR_INVALID_VALUE \
			-- "$wl/init_allreduce"
		rc=$?
		el=$(( $(date +%s) - t0 ))
		[ $rc -ne 0 ] || fail "fault run $i: ncclrr run exited 0"
		[ $el -le $((fto + 15)) ] || fail "fault run $i: took ${el}s (timeout $fto s)"
		if grep -E '^\[3\] .*(transport\.cc:[0-9]+ -> [0-9]+|Failed to execute operation Connect)' "$log" >"$tmp/m"; then
			echo "fault run $i: exit $rc in ${el}s; rank 3: $(head -n1 "$tmp/m")"
		else
			fail "fault run $i: no transport.cc/Connect failure on rank 3"
			show_tail "$log"
		fi
	done
	;;
*) echo "unknown case $case_"; exit 2 ;;
esac
[ $fails -eq 0 ] && echo "PASS $case_" || echo "$fails failure(s) in $case_"
[ $fails -eq 0 ]
