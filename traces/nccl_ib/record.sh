#!/usr/bin/env bash
# Record the golden traces of real NCCL failing over NET/IB on the fake
# verbs fabric (traces/nccl_ib/) again, and their expected `ncclrr replay`
# output. Each is tests/workloads/init_allreduce as 8 ranks on
# topo/2node_8gpu_roce.xml (2 virtual hosts of 4 fake GPUs and 2 RoCE
# NICs), real NCCL 2.22.3 relinked against ncclrr's runtime
# (scripts/nccl.sh), connecting at init (NCCL_RUNTIME_CONNECT=0) with the
# NICs' RoCE v2 GID (NCCL_IB_GID_INDEX=1), recorded with `ncclrr record`
# around `ncclrr run`. The failures are NCCL's own reaction to one fault on
# one rank (rank 4, node1's first GPU): nothing in the workload causes them.
# usage: traces/nccl_ib/record.sh [BUILD_DIR] [NAME...]
# shellcheck source=traces/record_common.sh
. "$(dirname "$0")/../record_common.sh"
wl=$build/tests/workloads/init_allreduce
topo=$root/topo/2node_8gpu_roce.xml
use_nccl
unset NCCLRR_FAULT NCCL_SOCKET_IFNAME NCCL_CUMEM_ENABLE NCCL_RUNTIME_CONNECT NCCL_IB_DISABLE NCCL_IB_GID_INDEX
export NCCL_DEBUG=WARN

# rec NAME TIMEOUT [ncclrr run options...] [-- PROGRAM ARGS]: record, keep
# NCCL's output as NAME.log
rec() {
	local name=$1 t=$2; shift 2
	local opts=() prog=("$wl")
	while [ $# -gt 0 ] && [ "$1" != -- ]; do opts+=("$1"); shift; done
	[ $# -gt 0 ] && { shift; prog=("$@"); }
	rm -rf "${here:?}/$name"
	"$ncclrr" record -q -o "$here/$name" -- \
		"$ncclrr" run --nccl "$NCCLRR_NCCL" --topo "$topo" --timeout "$t" \
		--env NCCL_IB_GID_INDEX=1 --env NCCL_RUNTIME_CONNECT=0 "${opts[@]}" -- "${prog[@]}" \
		>"$here/$name.log" 2>&1 || true
}

want() { local n=$1; shift; [ $# -eq 0 ] || [[ " $* " == *" $n "* ]]; }
names=("$@")
run_one() {
	local n=$1
	want "$n" "${names[@]}" || return 0
	case $n in
	clean_ib) rec clean_ib 120 ;;
	# rank 4 takes GID index 0 (its NIC's RoCE v1 / link-local GID) while
	# every other rank takes 1 (RoCE v2): its peers' RTR, a v2 source to
	# rank 4's v1 GID, has no route
	gid_index) rec gid_index 20 --rank-env 4:NCCL_IB_GID_INDEX=0 ;;
	# rank 4 lowers its own RLIMIT_MEMLOCK to 0 (the launcher raises
	# it for every rank; a rank can only lower it), then runs the workload
	memlock) rec memlock 20 -- sh -c '[ "$NCCLRR_RANK" != 4 ] || ulimit -l 0; exec "$0" "$@"' "$wl" ;;
	# rank 3 dies after init, its QPs at RTS (connect at init): its
	# first buffer allocation fails (CUDA_ERROR_OUT_OF_MEMORY), it exits
	# 1 without ending its communicator. Every rank pauses 1 s after
	# init and 1 s before its AllReduce, so rank 3 is gone by then. It
	# is the ring's NET sender to rank 4 (ring 0..7 on every channel,
	# 3 -> 4 crossing the hosts); the others check NCCL's asynchronous
	# error for 1 s after the AllReduce. Rank 4's proxy posts its
	# receives and RDMA-WRITEs its CTS FIFO entry to rank 3: no answer,
	# sent again per NCCL's QP timeout (NCCL 2.22's NCCL_IB_TIMEOUT 18
	# and NCCL_IB_RETRY_CNT 7: 8 tries of 1.07 s on an HCA; the fabric
	# divides by NCCLRR_VERBS_TIME_SCALE 16 and takes at least
	# NCCLRR_VERBS_MIN_TIMEOUT_MS, 50 here: 0.54 s), then
	# IBV_WC_RETRY_EXC_ERR. The short times keep the proxies' polling,
	# and so the replay, short.
	retry_exc) rec retry_exc 40 --env 'NCCLRR_FAULT=cuMemAlloc:rank=3:nth=1:CUDA_ERROR_OUT_OF_MEMORY' \
		--env NCCLRR_VERBS_MIN_TIMEOUT_MS=50 -- "$wl" --pause 1 --watch 1 ;;
	# the same run with rank 3 killed outright instead (SIGKILL at that
	# first allocation, 1 s after its init): no end in its trace, which
	# replays up to its last tail's whole_ts (replayer/README.md); rank 4
	# prints the same completion errors
	killed) rec killed 40 --env 'NCCLRR_FAULT=cuMemAlloc:rank=3:nth=1:SIGKILL' \
		--env NCCLRR_VERBS_MIN_TIMEOUT_MS=50 -- "$wl" --pause 1 --watch 1 ;;
	esac
	rm -f "$here/$n/nccl-topo.xml"
	"$ncclrr" replay --topo "$topo" "$here/$n" | "$here/../replay/normalize.sh" >"$here/$n.expected" || true
	echo "$n: $(du -sh "$here/$n" | cut -f1), $(grep -c . "$here/$n.log") lines of output"
}
for n in clean_ib gid_index memlock retry_exc killed; do
	run_one "$n"
done
