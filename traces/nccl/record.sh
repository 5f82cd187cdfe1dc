#!/usr/bin/env bash
# Record the golden traces of real NCCL failing (traces/nccl/) again, and
# their expected `ncclrr replay` output.  Each is tests/workloads/tp_dp (a
# global communicator, a tensor-parallel split per host, a data-parallel
# split across hosts, an AllReduce on each) as 16 ranks on
# topo/2node_16gpu.xml, real NCCL relinked against ncclrr's runtime
# (scripts/nccl.sh), recorded with `ncclrr record` around `ncclrr run`.
# The failures are NCCL's own reaction to one fault on one rank: nothing
# in the workload prints or causes them.
# usage: traces/nccl/record.sh [BUILD_DIR] [NAME...]
# shellcheck source=traces/record_common.sh
. "$(dirname "$0")/../record_common.sh"
wl=$build/tests/workloads/tp_dp
topo=$root/topo/2node_16gpu.xml
use_nccl
unset NCCLRR_FAULT NCCL_SOCKET_IFNAME NCCL_CUMEM_ENABLE NCCL_RUNTIME_CONNECT
export NCCL_DEBUG=WARN

# rec NAME TIMEOUT [ncclrr run options...]: record, keep NCCL's output as NAME.log
rec() {
	local name=$1 t=$2; shift 2
	rm -rf "${here:?}/$name"
	"$ncclrr" record -q -o "$here/$name" -- \
		"$ncclrr" run --nccl "$NCCLRR_NCCL" --topo "$topo" --timeout "$t" "$@" -- "$wl" >"$here/$name.log" 2>&1 || true
}

# bootstrap_race: NCCL 2.22's bootstrap bug (NVIDIA/nccl#1515) with a late
# root. Every rank takes NCCL_COMM_ID (WL_USE_COMM_ID=1: no out-of-band id)
# and rank 0, which opens the bootstrap root inside ncclCommInitRank, starts
# 3 s after the others (ncclrr run --start-late, as a node that boots
# late): each other rank's connect to the root is refused, NCCL retries on
# the same socket and gets ECONNABORTED. 8 ranks of init_allreduce on
# 2node_8gpu_pcie: the race needs no more, and sid's NCCL reruns it in
# seconds (16 ranks of tp_dp take it a minute on 2 cores).
rec_race() {
	local name=bootstrap_race
	rm -rf "${here:?}/$name"
	WL_USE_COMM_ID=1 "$ncclrr" record -q -o "$here/$name" -- \
		"$ncclrr" run --nccl "$NCCLRR_NCCL" --topo "$root/topo/2node_8gpu_pcie.xml" --timeout 10 \
		--start-late 0:3 -- "$build/tests/workloads/init_allreduce" >"$here/$name.log" 2>&1 || true
}

# rank_killed: SIGKILL rank 5 once it has joined the bootstrap (its first
# line is printed before ncclCommInitRank), while its peers connect
rec_killed() {
	local name=rank_killed log=$here/rank_killed.log
	rm -rf "${here:?}/$name"
	"$ncclrr" record -q -o "$here/$name" -- \
		"$ncclrr" run --nccl "$NCCLRR_NCCL" --topo "$topo" --timeout 20 -- "$wl" >"$log" 2>&1 &
	local job=$!
	for _ in $(seq 600); do
		grep -q '^\[5\] rank 5: NCCL' "$log" && break
		sleep 0.1
	done
	sleep 1.5   # into ncclCommInitRank: bootstrap and transport setup
	# the rank's process: the tp_dp whose environment says NCCLRR_RANK=5
	local p
	for p in $(pgrep -f "$wl"); do
		if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx 'NCCLRR_RANK=5'; then
			kill -KILL "$p"
			break
		fi
	done
	wait "$job" || true
}

want() { local n=$1; shift; [ $# -eq 0 ] || [[ " $* " == *" $n "* ]]; }
names=("$@")
run_one() {
	local n=$1
	want "$n" "${names[@]}" || return 0
	case $n in
	clean) rec clean 120 ;;
	p2p_ipc_open) rec p2p_ipc_open 10 --env NCCL_CUMEM_ENABLE=0 \
		--env NCCLRR_FAULT=cudaIpcOpenMemHandle:rank=3:nth=1:cudaErrorInvalidValue ;;
	cumem_import) rec cumem_import 10 --env NCCL_RUNTIME_CONNECT=0 \
		--env NCCLRR_FAULT=cuMemImportFromShareableHandle:rank=3:nth=1:CUDA_ERROR_INVALID_VALUE ;;
	net_connect) rec net_connect 10 --env NCCL_RUNTIME_CONNECT=0 --rank-env 8:NCCL_SET_THREAD_NAME=1 \
		--rank-env '8:NCCLRR_FAULT=connect:thread=NCCL Service:nth=1:ECONNREFUSED' ;;
	bad_ifname) rec bad_ifname 20 --rank-env 5:NCCL_SOCKET_IFNAME=nosuchif0 ;;
	rank_killed) rec_killed ;;
	bootstrap_race) rec_race ;;
	esac
	rm -f "$here/$n/nccl-topo.xml"
	local t=$topo
	[ "$n" = bootstrap_race ] && t=$root/topo/2node_8gpu_pcie.xml
	"$ncclrr" replay --topo "$t" "$here/$n" | "$here/../replay/normalize.sh" >"$here/$n.expected" || true
	echo "$n: $(du -sh "$here/$n" | cut -f1), $(grep -c . "$here/$n.log") lines of output"
}
for n in clean p2p_ipc_open cumem_import net_connect bad_ifname rank_killed bootstrap_race; do
	run_one "$n"
done
