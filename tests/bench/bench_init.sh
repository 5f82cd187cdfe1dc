#!/usr/bin/env bash
# Wall time of `2node_16gpu` init (the tp_dp workload: global comm, TP and
# DP splits, one AllReduce each, teardown) on the fake runtime, for later
# comparison.  Not a test: prints numbers.  Skips (77) without libnccl.so.2.
# usage: bench_init.sh NCCLRR SOURCE_ROOT WORKLOAD_DIR [NCCL_HINT] [REPEAT]
set -uo pipefail
ncclrr=$(realpath "$1")
root=$2
wl=$(realpath "$3")
NCCL_HINT=${4:-}
repeat=${5:-${NCCLRR_BENCH_REPEAT:-1}}
. "$root/tests/integration/nccl_common.sh"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
echo "bench_init: NCCL $NCCL, topo/2node_16gpu.xml, 16 ranks on $(nproc) cores"
best=
for i in $(seq 1 "$repeat"); do
	t0=$(date +%s.%N)
	NCCL_DEBUG=INFO "$ncclrr" run --topo "$root/topo/2node_16gpu.xml" --timeout 590 -- "$wl/tp_dp" >"$log" 2>&1
	rc=$?
	t1=$(date +%s.%N)
	wall=$(echo "$t1 - $t0" | bc)
	# first line of rank 0 to its last "Init COMPLETE" (the init part alone)
	n=$(grep -c -- '- Init COMPLETE' "$log")
	echo "bench_init: run $i: exit $rc, wall ${wall} s, ${n}/48 Init COMPLETE"
	if [ $rc -ne 0 ]; then tail -n 20 "$log"; exit 1; fi
	if [ -z "$best" ] || [ "$(echo "$wall < $best" | bc)" = 1 ]; then best=$wall; fi
done
echo "bench_init: 2node_16gpu tp_dp wall time (best of $repeat): ${best} s"
